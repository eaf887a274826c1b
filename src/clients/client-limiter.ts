/**
 * One client's limits (docs/operations.md#client-keys): batches in flight (a slot each) and candidates per minute (a
 * token bucket of that size, refilled continuously at size/60 a second). A batch needs both; batches that do
 * not fit wait in one FIFO queue (a small batch never overtakes a big one that came first, so a big one cannot
 * starve), each for at most its own wait, and a waiter whose client leaves is dropped from the queue.
 *
 * A batch asking more candidates than the whole bucket waits until the bucket is full, then takes it into debt
 * (tokens below zero): it is served rather than never, and the batches after it wait until the debt is repaid,
 * so the rate over time still holds.
 *
 * The only writer of its counts; time comes from an injected clock, so tests step it instead of sleeping.
 */
import type { AbortLike } from '../abort.js';

export type LimitName = 'batches_in_flight' | 'candidates_per_minute';

/** Time as the limiter reads it; systemClock in the gateway, a stepped one in tests. */
export interface LimiterClock {
  /** Milliseconds, monotonic. */
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const systemClock: LimiterClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout), // only handles setTimer returned come back
};

export interface LimitSettings {
  maxInFlight: number | undefined;
  perMinute: number | undefined;
}

export interface Granted {
  readonly ok: true;
  /** How long the batch waited (0 when it fitted at once) and, if it waited, for which limit first. */
  readonly waitedMs: number;
  readonly waitedFor: LimitName | undefined;
  /** Gives the slot back; idempotent. The tokens stay spent. */
  release(): void;
}

export interface Refused {
  readonly ok: false;
  /** The limit still in the way when the wait ended. */
  readonly limit: LimitName;
  readonly waitedMs: number;
  /** The signal aborted (the client left, the batch deadline passed) rather than the wait running out. */
  readonly cancelled: boolean;
}

export type Admission = Granted | Refused;

/** What a limiter reports, for the metrics (client-limits.ts binds the client's name). */
export interface LimiterEvents {
  /** A batch did not fit and started to wait, for this limit. */
  waited(limit: LimitName): void;
  /** A batch that waited left the queue, served or not. */
  waitEnded(ms: number, served: boolean): void;
  /** A batch was answered over this limit (not counted when cancelled). */
  refused(limit: LimitName): void;
}

interface Waiter {
  readonly candidates: number;
  readonly since: number;
  readonly waitedFor: LimitName;
  settled: boolean;
  timer: unknown;
  signal: AbortLike | undefined;
  onAbort: (() => void) | undefined;
  resolve(a: Admission): void;
}

/** Slack for float refills: a timer set for the moment the tokens suffice must find them sufficient. */
const EPSILON = 1e-6;

export class ClientLimiter {
  private inFlightCount = 0;
  private tokens = 0;
  private refilledAt: number;
  /** FIFO; settled waiters are skipped (and dropped from the front) rather than spliced out. */
  private readonly queue: Waiter[] = [];
  private head = 0;
  private waitingCount = 0;
  private tokenTimer: unknown;

  constructor(
    private settings: LimitSettings,
    private readonly clock: LimiterClock,
    private readonly events?: LimiterEvents,
  ) {
    this.refilledAt = clock.now();
    this.tokens = settings.perMinute ?? 0;
  }

  get inFlight(): number {
    return this.inFlightCount;
  }

  get waiting(): number {
    return this.waitingCount;
  }

  /** Tokens now (refilled to this moment); negative while a batch bigger than the bucket is being repaid. */
  availableTokens(): number {
    this.refill();
    return this.tokens;
  }

  /**
   * New limits (a reload): the bucket keeps its level, capped at the new size (a new bucket starts full), and
   * waiters that fit now are served.
   */
  configure(settings: LimitSettings): void {
    this.refill();
    if (settings.perMinute !== undefined) {
      this.tokens = this.settings.perMinute === undefined ? settings.perMinute : Math.min(this.tokens, settings.perMinute);
    }
    this.settings = settings;
    this.pump();
  }

  /**
   * A slot and `candidates` tokens, at once when they are free and nobody waits, else after waiting in order
   * for at most `waitMs`. An aborted signal ends the wait (refused, cancelled); a signal that aborts after the
   * grant changes nothing (the caller releases in its `finally`).
   */
  acquire(candidates: number, waitMs: number, signal?: AbortLike): Admission | Promise<Admission> {
    this.refill();
    if (this.waitingCount === 0 && this.fits(candidates)) return this.grant(candidates, 0, undefined);
    const limit = this.blocking(candidates);
    if (signal?.aborted === true) return { ok: false, limit, waitedMs: 0, cancelled: true };
    if (waitMs <= 0) {
      this.events?.refused(limit);
      return { ok: false, limit, waitedMs: 0, cancelled: false };
    }
    this.events?.waited(limit);
    return new Promise<Admission>((resolve) => {
      const w: Waiter = { candidates, since: this.clock.now(), waitedFor: limit, settled: false, timer: undefined, signal, onAbort: undefined, resolve };
      w.timer = this.clock.setTimer(() => this.refuse(w, false), waitMs);
      if (signal !== undefined) {
        // Not `w.onAbort = () => ...`: V8 puts a function literal assigned to a property in the old generation,
        // where it would keep this waiter's batch alive until a full GC (see upstream/backend-call.ts).
        w.onAbort = this.refuser(w);
        signal.addEventListener('abort', w.onAbort);
      }
      this.queue.push(w);
      this.waitingCount++;
      this.armTokenTimer();
    });
  }

  private refill(): void {
    const now = this.clock.now();
    const size = this.settings.perMinute;
    if (size !== undefined && now > this.refilledAt) this.tokens = Math.min(size, this.tokens + ((now - this.refilledAt) * size) / 60_000);
    this.refilledAt = now;
  }

  /** Tokens a batch needs before it may start: all it asks, or the whole bucket when it asks more. */
  private need(candidates: number): number {
    const size = this.settings.perMinute;
    return size === undefined ? 0 : Math.min(candidates, size);
  }

  private slotFree(): boolean {
    return this.settings.maxInFlight === undefined || this.inFlightCount < this.settings.maxInFlight;
  }

  private tokensSuffice(candidates: number): boolean {
    return this.settings.perMinute === undefined || this.tokens + EPSILON >= this.need(candidates);
  }

  private fits(candidates: number): boolean {
    return this.slotFree() && this.tokensSuffice(candidates);
  }

  /** The limit keeping a batch of this size out now; one that would fit is behind the first waiter. */
  private blocking(candidates: number): LimitName {
    if (!this.slotFree()) return 'batches_in_flight';
    if (!this.tokensSuffice(candidates)) return 'candidates_per_minute';
    const first = this.firstWaiter();
    return first !== undefined && !this.tokensSuffice(first.candidates) ? 'candidates_per_minute' : 'batches_in_flight';
  }

  private grant(candidates: number, waitedMs: number, waitedFor: LimitName | undefined): Granted {
    this.inFlightCount++;
    if (this.settings.perMinute !== undefined) this.tokens -= candidates;
    let released = false;
    return {
      ok: true,
      waitedMs,
      waitedFor,
      release: () => {
        if (released) return;
        released = true;
        this.inFlightCount--;
        this.pump();
      },
    };
  }

  private firstWaiter(): Waiter | undefined {
    let first = this.queue[this.head];
    while (first?.settled === true) first = this.queue[++this.head];
    if (this.head > 64 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    return this.queue[this.head];
  }

  /** Serve waiters from the front while they fit; then wait for tokens if that is what the first one lacks. */
  private pump(): void {
    this.refill();
    for (let w = this.firstWaiter(); w !== undefined && this.fits(w.candidates); w = this.firstWaiter()) {
      this.settle(w);
      const waitedMs = this.clock.now() - w.since;
      this.events?.waitEnded(waitedMs, true);
      w.resolve(this.grant(w.candidates, waitedMs, w.waitedFor));
    }
    this.armTokenTimer();
  }

  /** A timer for when the first waiter's tokens will have refilled (a slot coming free pumps by itself). */
  private armTokenTimer(): void {
    if (this.tokenTimer !== undefined) this.clock.clearTimer(this.tokenTimer);
    this.tokenTimer = undefined;
    const first = this.firstWaiter();
    const size = this.settings.perMinute;
    if (first === undefined || size === undefined || this.tokensSuffice(first.candidates)) return;
    const ms = Math.max(1, Math.ceil(((this.need(first.candidates) - this.tokens) * 60_000) / size));
    this.tokenTimer = this.clock.setTimer(() => {
      this.tokenTimer = undefined;
      this.pump();
    }, ms);
  }

  private settle(w: Waiter): void {
    w.settled = true;
    this.waitingCount--;
    this.clock.clearTimer(w.timer);
    if (w.onAbort !== undefined) w.signal?.removeEventListener('abort', w.onAbort);
  }

  /** The abort listener of a waiter: refuses it as cancelled. */
  private refuser(w: Waiter): () => void {
    return () => this.refuse(w, true);
  }

  private refuse(w: Waiter, cancelled: boolean): void {
    if (w.settled) return;
    this.refill();
    this.settle(w);
    const waitedMs = this.clock.now() - w.since;
    // What keeps it out now, once it no longer queues behind itself.
    const limit = this.blocking(w.candidates);
    this.events?.waitEnded(waitedMs, false);
    if (!cancelled) this.events?.refused(limit);
    w.resolve({ ok: false, limit, waitedMs, cancelled });
    // It may have been the first waiter, holding smaller ones back.
    this.pump();
  }
}
