/**
 * Every client's limiter, by client name (docs/operations.md#client-keys): the one owner of per-client limit state. It
 * outlives config reloads (it lives in the gateway state, not in a runtime): `configure` with the new
 * `clients:` keeps each remaining client's slots, tokens and queue under its name, applies changed limits
 * (waiters that fit now are served), starts new clients with a full bucket and lets removed ones go (their
 * waiters are served: no limit holds them any more). Limits are per gateway process.
 */
import type { AbortLike } from '../abort.js';
import type { ClientsConfig } from '../config/schema.js';
import { ClientLimiter, systemClock, type Admission, type Granted, type LimiterClock, type LimitName, type LimitSettings } from './client-limiter.js';

/** What the limiters report, by client, for the metrics. */
interface ClientLimitEvents {
  waited(client: string, limit: LimitName): void;
  waitEnded(client: string, seconds: number, served: boolean): void;
  refused(client: string, limit: LimitName): void;
}

/** The grant of a client without limits: nothing to count, nothing to give back. */
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

  /** The limits of a (re)loaded config, applied by client name. */
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
      // Its batches in flight release into the detached limiter, which nothing reads any more.
      entry.limiter.configure(NONE);
      this.limiters.delete(name);
    }
  }

  /** Whether a client has a limit (no limit: acquire answers at once, without counting). */
  limited(name: string): boolean {
    return this.limiters.has(name);
  }

  /**
   * A slot for one batch of `name` asking `candidates`, waiting at most max_wait_s and at most `timeLeftMs`
   * (the batch deadline); `signal` ends the wait when the client leaves or the deadline passes.
   */
  acquire(name: string, candidates: number, timeLeftMs: number, signal?: AbortLike): Admission | Promise<Admission> {
    const entry = this.limiters.get(name);
    if (entry === undefined) return UNLIMITED;
    return entry.limiter.acquire(candidates, Math.min(entry.maxWaitMs, timeLeftMs), signal);
  }

  /** Batches waiting now, by client (limited clients only), for the metrics gauge. */
  waitingByClient(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, { limiter }] of this.limiters) out.set(name, limiter.waiting);
    return out;
  }

  /** The limiter of a client, for tests and views; undefined without limits. */
  limiterOf(name: string): ClientLimiter | undefined {
    return this.limiters.get(name)?.limiter;
  }

  private eventsFor(name: string): ConstructorParameters<typeof ClientLimiter>[2] {
    const e = this.events;
    if (e === undefined) return undefined;
    return {
      waited: (limit) => e.waited(name, limit),
      waitEnded: (ms, served) => e.waitEnded(name, ms / 1000, served),
      refused: (limit) => e.refused(name, limit),
    };
  }
}
