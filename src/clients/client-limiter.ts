/**
 * One client's limits (docs/operations.md#client-keys). Waiters form one FIFO queue, so a big batch cannot starve
 * behind small ones; one asking more than the whole bucket waits for a full one and takes it into debt.
 */
import type { AbortLike } from '../abort.js';
import { Fifo } from '../state/util.js';
import { makePermit } from '../state/semaphores.js';

export type LimitName = 'batches_in_flight' | 'candidates_per_minute';

/** Injected, so tests step it instead of sleeping; the experiment history's clock too. */
export interface LimiterClock {
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
  readonly waitedMs: number;
  readonly waitedFor: LimitName | undefined;
  /** Idempotent. The tokens stay spent. */
  release(): void;
}

export interface Refused {
  readonly ok: false;
  readonly limit: LimitName;
  readonly waitedMs: number;
  readonly cancelled: boolean;
}

export type Admission = Granted | Refused;

export interface LimiterEvents {
  waited(limit: LimitName): void;
  waitEnded(ms: number, served: boolean): void;
  /** Not when cancelled. */
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
  private readonly queue = new Fifo<Waiter>();
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

  /** Negative while a batch bigger than the bucket is being repaid. */
  availableTokens(): number {
    this.refill();
    return this.tokens;
  }

  /** A reload: the bucket keeps its level, capped at the new size (a new bucket starts full). */
  configure(settings: LimitSettings): void {
    this.refill();
    if (settings.perMinute !== undefined) {
      this.tokens = this.settings.perMinute === undefined ? settings.perMinute : Math.min(this.tokens, settings.perMinute);
    }
    this.settings = settings;
    this.pump();
  }

  /** A signal that aborts after the grant changes nothing: the caller releases in its `finally`. */
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
        // Not `w.onAbort = () => ...`: V8 tenures a function literal assigned to a property, and the batch with it.
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

  /** All it asks, or the whole bucket when it asks more. */
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

  /** One that would fit is behind the first waiter. */
  private blocking(candidates: number): LimitName {
    if (!this.slotFree()) return 'batches_in_flight';
    if (!this.tokensSuffice(candidates)) return 'candidates_per_minute';
    const first = this.firstWaiter();
    return first !== undefined && !this.tokensSuffice(first.candidates) ? 'candidates_per_minute' : 'batches_in_flight';
  }

  private grant(candidates: number, waitedMs: number, waitedFor: LimitName | undefined): Granted {
    this.inFlightCount++;
    if (this.settings.perMinute !== undefined) this.tokens -= candidates;
    const { release } = makePermit(() => {
      this.inFlightCount--;
      this.pump();
    });
    return { ok: true, waitedMs, waitedFor, release };
  }

  private firstWaiter(): Waiter | undefined {
    while (this.queue.peek()?.settled === true) this.queue.shift();
    return this.queue.peek();
  }

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

  /** For the first waiter's tokens; a slot coming free pumps by itself. */
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

  private refuser(w: Waiter): () => void {
    return () => this.refuse(w, true);
  }

  private refuse(w: Waiter, cancelled: boolean): void {
    if (w.settled) return;
    this.refill();
    this.settle(w);
    const waitedMs = this.clock.now() - w.since;
    const limit = this.blocking(w.candidates);
    this.events?.waitEnded(waitedMs, false);
    if (!cancelled) this.events?.refused(limit);
    w.resolve({ ok: false, limit, waitedMs, cancelled });
    this.pump(); // it may have held smaller ones back
  }
}
