/**
 * A retry budget like Envoy's (docs/routing.md#fallbacks-deadline-and-retry-budget): it keeps failover from doubling
 * the load on the survivors when a backend fails under load; `min` lets a quiet gateway still fail over.
 */
export class RetryBudget {
  private active = 0;
  private retrying = 0;

  constructor(
    private readonly ratio: number,
    private readonly min: number,
  ) {}

  /** From the moment it waits for a replica. */
  attemptStarted(): void {
    this.active++;
  }

  attemptEnded(): void {
    this.active--;
  }

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
