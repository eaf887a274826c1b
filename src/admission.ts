/**
 * Admission of request bodies by size (`server.max_bytes_in_flight_mb`, docs/configuration.md#limits-and-timeouts).
 *
 * Every batch holds its body in memory (and more: parsed values, the answer) until it is answered, so the
 * bodies held at once are bounded. A batch that would go over the budget is not refused (BENCH aborts a
 * whole run on one HTTP error): it waits, in arrival order, until enough bodies before it are answered. Its
 * body is not read meanwhile, so TCP holds it back at the client. One body larger than the whole budget is
 * admitted when nothing else is in flight, or it would wait forever.
 *
 * The one owner of the byte and waiter counts; callbacks rather than promises, because every batch passes
 * here and nearly all are admitted at once.
 */

interface AdmissionStats {
  /** Body bytes of admitted batches not yet answered. */
  readonly bytesInFlight: number;
  /** Batches waiting for room. */
  readonly waiting: number;
}

/** One batch's place: admitted or waiting. */
export interface AdmissionHold {
  /** Count `bytes` more (a body of unknown length, as it arrives); never waits. */
  grow(bytes: number): void;
  /** Give the bytes back (admitted) or leave the queue (waiting); idempotent. */
  release(): void;
}

class Hold implements AdmissionHold {
  admitted = false;
  released = false;
  waitStart = 0;

  constructor(
    private readonly owner: Admission,
    public bytes: number,
    readonly onAdmit: (hold: AdmissionHold) => void,
  ) {}

  grow(bytes: number): void {
    if (this.released) return;
    this.bytes += bytes;
    if (this.admitted) this.owner.add(bytes);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.owner.leave(this);
  }
}

export class Admission implements AdmissionStats {
  private inFlight = 0;
  private waiters = 0;
  /** FIFO; released waiters are skipped when they reach the head (no search on release). */
  private queue: Hold[] = [];
  private head = 0;

  /**
   * @param limit the budget in bytes, read at each decision (a reload may change it)
   * @param onWaited called with the seconds a batch waited, for those that did
   */
  constructor(
    private readonly limit: () => number,
    private readonly onWaited: (seconds: number) => void = () => undefined,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  get waiting(): number {
    return this.waiters;
  }

  /**
   * Ask room for `bytes`; `onAdmit` runs now (synchronously, before this returns) when there is room, else
   * when room comes, with the same hold this returns.
   */
  acquire(bytes: number, onAdmit: (hold: AdmissionHold) => void): AdmissionHold {
    const hold = new Hold(this, bytes, onAdmit);
    if (this.waiters === 0 && this.fits(bytes)) {
      this.admit(hold);
      return hold;
    }
    hold.waitStart = this.now();
    this.queue.push(hold);
    this.waiters++;
    return hold;
  }

  /** @internal Bytes counted after admission (Hold.grow). */
  add(bytes: number): void {
    this.inFlight += bytes;
  }

  /** @internal */
  leave(hold: Hold): void {
    if (hold.admitted) this.inFlight -= hold.bytes;
    else this.waiters--;
    this.drain();
  }

  private fits(bytes: number): boolean {
    return this.inFlight === 0 || this.inFlight + bytes <= this.limit();
  }

  private admit(hold: Hold): void {
    hold.admitted = true;
    this.inFlight += hold.bytes;
    hold.onAdmit(hold);
  }

  /** Admit from the head while the head fits; a later, smaller body never overtakes (no starvation). */
  private drain(): void {
    while (this.head < this.queue.length) {
      const next = this.queue[this.head]!; // head < queue.length: the loop condition
      if (next.released) {
        this.head++;
        continue;
      }
      if (!this.fits(next.bytes)) break;
      this.head++;
      this.waiters--;
      this.onWaited((this.now() - next.waitStart) / 1000);
      this.admit(next);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
