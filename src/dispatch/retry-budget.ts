/**
 * A retry budget like Envoy's (docs/routing.md#fallbacks-deadline-and-retry-budget): retries of failed sub-requests in progress
 * may not exceed `ratio` of every sub-request in flight, retries included (Envoy's budget_percent of active
 * requests), with a floor of `min` (min_retry_concurrency) so a quiet gateway can still fail over. When a
 * backend fails under load, this keeps failover from doubling the load on the survivors.
 *
 * What is not a retry, and never asks here: inputs moved on because their backend had no ready replica, or
 * because a connection was refused (nothing was sent, so moving them adds no load anywhere).
 */
export class RetryBudget {
  private active = 0;
  private retrying = 0;

  constructor(
    private readonly ratio: number,
    private readonly min: number,
  ) {}

  /** A sub-request (first attempt or retry) is in flight, from the moment it waits for a replica. */
  attemptStarted(): void {
    this.active++;
  }

  attemptEnded(): void {
    this.active--;
  }

  /** Take a slot for a retry; false when the budget is spent (then fail at once). */
  tryRetry(): boolean {
    const allowed = Math.max(this.min, Math.floor(this.active * this.ratio));
    if (this.retrying >= allowed) return false;
    this.retrying++;
    return true;
  }

  /** The retry that took a slot is over, fallbacks of it included. */
  retryDone(): void {
    this.retrying--;
  }

  get inFlight(): { active: number; retrying: number } {
    return { active: this.active, retrying: this.retrying };
  }
}
