/** Every client's limiter, by name; it outlives reloads, and a removed client's waiters are served. */
import type { AbortLike } from '../abort.js';
import type { ClientsConfig } from '../config/schema.js';
import { ClientLimiter, systemClock, type Admission, type Granted, type LimiterClock, type LimiterEvents, type LimitName, type LimitSettings } from './client-limiter.js';

interface ClientLimitEvents {
  waited(client: string, limit: LimitName): void;
  waitEnded(client: string, seconds: number, served: boolean): void;
  refused(client: string, limit: LimitName): void;
}

const UNLIMITED: Granted = { ok: true, waitedMs: 0, waitedFor: undefined, release: () => undefined };

const NONE: LimitSettings = { maxInFlight: undefined, perMinute: undefined };

export class ClientLimits {
  private readonly limiters = new Map<string, { limiter: ClientLimiter; maxWaitMs: number }>();

  constructor(
    clients: ClientsConfig | undefined,
    private readonly events?: ClientLimitEvents,
    private readonly clock: LimiterClock = systemClock,
  ) {
    this.configure(clients);
  }

  configure(clients: ClientsConfig | undefined): void {
    const next = new Set<string>();
    for (const [name, c] of Object.entries(clients ?? {})) {
      const settings: LimitSettings = { maxInFlight: c.max_batches_in_flight, perMinute: c.max_candidates_per_minute };
      if (settings.maxInFlight === undefined && settings.perMinute === undefined) continue;
      next.add(name);
      const maxWaitMs = c.max_wait_s * 1000;
      const entry = this.limiters.get(name);
      if (entry === undefined) {
        this.limiters.set(name, { limiter: new ClientLimiter(settings, this.clock, this.eventsFor(name)), maxWaitMs });
      } else {
        entry.maxWaitMs = maxWaitMs;
        entry.limiter.configure(settings);
      }
    }
    for (const [name, entry] of this.limiters) {
      if (next.has(name)) continue;
      // Its batches in flight release into the detached limiter.
      entry.limiter.configure(NONE);
      this.limiters.delete(name);
    }
  }

  limited(name: string): boolean {
    return this.limiters.has(name);
  }

  /** Waits at most max_wait_s and `timeLeftMs` (the batch deadline). */
  acquire(name: string, candidates: number, timeLeftMs: number, signal?: AbortLike): Admission | Promise<Admission> {
    const entry = this.limiters.get(name);
    if (entry === undefined) return UNLIMITED;
    return entry.limiter.acquire(candidates, Math.min(entry.maxWaitMs, timeLeftMs), signal);
  }

  waitingByClient(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, { limiter }] of this.limiters) out.set(name, limiter.waiting);
    return out;
  }

  limiterOf(name: string): ClientLimiter | undefined {
    return this.limiters.get(name)?.limiter;
  }

  private eventsFor(name: string): LimiterEvents | undefined {
    const e = this.events;
    if (e === undefined) return undefined;
    return {
      waited: (limit) => e.waited(name, limit),
      waitEnded: (ms, served) => e.waitEnded(name, ms / 1000, served),
      refused: (limit) => e.refused(name, limit),
    };
  }
}
