/**
 * A clock that moves only when the test steps it (a LimiterClock, src/clients/client-limiter.ts): timers fire
 * in due order as `advance` passes them, synchronously, so a test of waits and refills needs no sleep.
 */
import type { LimiterClock } from '../../src/clients/client-limiter.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

export class StepClock implements LimiterClock {
  private t = 0;
  private seq = 0;
  private readonly timers = new Set<Timer>();

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number): unknown {
    const timer = { at: this.t + ms, seq: this.seq++, fn };
    this.timers.add(timer);
    return timer;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as Timer); // only handles setTimer returned come back
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.timers.size;
  }

  /** Move time forward by `ms`, firing every timer due on the way, earliest first. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const timer of this.timers) if (timer.at <= end && (next === undefined || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))) next = timer;
      if (next === undefined) break;
      this.timers.delete(next);
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}
