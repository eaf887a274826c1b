/**
 * A retry budget like Envoy's (docs/gateway-behaviour.md, "Deadline and retry budget"): retries and fallbacks in
 * flight may not exceed a share of the
 * sub-requests in flight (ratio, default 20%), with a floor (min, default 3) so a quiet gateway can still fail
 * over. When a backend dies under load, this keeps failover from doubling the load on the survivors.
 */
export class RetryBudget {
  private active = 0;
  private retrying = 0;

  constructor(
    private readonly ratio: number,
    private readonly min: number,
  ) {}

  /** A first-attempt sub-request starts/ends. */
  begin(): void {
    this.active++;
  }

  end(): void {
    this.active--;
  }

  /** Take a slot for a retry or fallback; false when the budget is spent (then fail at once). */
  tryRetry(): boolean {
    const allowed = Math.max(this.min, Math.floor(this.active * this.ratio));
    if (this.retrying >= allowed) return false;
    this.retrying++;
    return true;
  }

  retryDone(): void {
    this.retrying--;
  }

  get inFlight(): { active: number; retrying: number } {
    return { active: this.active, retrying: this.retrying };
  }
}
