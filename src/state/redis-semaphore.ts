/**
 * Cluster-wide semaphores in Redis: one per key (a backend replica), shared by every gateway replica.
 *
 * Holders are a sorted set of permit ids scored by lease expiry; waiters a sorted set scored by ticket (FIFO)
 * with their own short liveness lease. SEM_ACQUIRE drops expired leases and dead waiters, and grants a permit
 * only to the first `limit - holders` waiters, so order is kept across replicas. A waiter retries when a
 * release is announced on pub/sub, and polls as a safety net (a lapsed lease announces nothing). Held permits
 * are renewed every lease/3; a replica that dies stops renewing, and its permits come back within the lease.
 *
 * While Redis is unavailable, acquire falls back to the per-process semaphore with the same limit, which also
 * counts the Redis permits this process still holds: during an outage each gateway replica enforces the limit
 * on its own. Permits granted locally are registered in Redis (SEM_HOLD) as soon as it is back, so the
 * cluster-wide count includes them until they are released.
 */
import type { AbortLike } from '../abort.js';
import type { LocalSemaphores } from './local-semaphore.js';
import { makePermit } from './local-semaphore.js';
import type { RedisLink } from './redis-link.js';
import { arrayReply, numberAt, SEM_ACQUIRE, SEM_HOLD, SEM_RELEASE } from './redis-scripts.js';
import type { AcquireOptions, Permit, StoreStats } from './types.js';
import { GAVE_UP, leaseRenewer, newId, raceAbort, Wakers } from './util.js';

/** How long a waiter stays queued without retrying before others may skip it (its replica died). */
const QUEUE_LEASE_MS = 3000;
/** Retry period of a waiter that could be granted next, and of one further back. */
const POLL_FRONT_MS = 40;
const POLL_BACK_MS = 150;
/** Least time given to the first attempt, so that `timeoutMs: 0` still takes a free permit. */
const FIRST_ATTEMPT_MS = 100;

interface Held {
  readonly id: string;
  readonly key: string;
  /** Whether Redis may count this permit (granted there, or registered after an outage). */
  inRedis: boolean;
  releaseLocal: () => void;
}

interface SemaphoreOptions {
  prefix: string;
  leaseMs: number;
}

export class RedisSemaphores {
  /** This process's waiters, woken when a release is announced. */
  private readonly waiters = new Wakers();
  private readonly held = new Map<string, Held>();
  /** Releases Redis did not confirm (down): sent again once it is back, so no slot waits for a lease to lapse. */
  private readonly unsentReleases = new Map<string, string>();
  private readonly renewTimer: NodeJS.Timeout;
  private readonly keyTtlMs: number;

  constructor(
    private readonly link: RedisLink,
    private readonly local: LocalSemaphores,
    private readonly stats: StoreStats,
    private readonly opts: SemaphoreOptions,
  ) {
    // Keys outlive any lease or queue entry they hold, then vanish with the last user.
    this.keyTtlMs = 2 * opts.leaseMs + QUEUE_LEASE_MS;
    this.renewTimer = leaseRenewer(opts.leaseMs, () => void this.renew());
  }

  async acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined> {
    const { signal, timeoutMs } = opts;
    if (signal?.aborted) {
      this.stats.acquireAborts++;
      return undefined;
    }
    if (!this.link.isUp()) return this.acquireLocal(key, limit, opts);
    const deadline = Date.now() + timeoutMs;
    const id = newId();
    const keys = this.keys(key);
    for (let first = true; ; first = false) {
      const attempt = this.link.script(SEM_ACQUIRE, keys, [id, limit, this.opts.leaseMs, QUEUE_LEASE_MS, this.keyTtlMs]);
      let reply: unknown;
      try {
        // The first attempt may take a moment even with no time to wait: a free permit is still granted.
        const budget = deadline - Date.now();
        reply = await raceAbort(attempt, first ? Math.max(budget, FIRST_ATTEMPT_MS) : budget, signal);
      } catch {
        // Redis failed mid-wait: withdraw (best effort; the queue lease covers a lost withdrawal) and go on
        // locally for the time left.
        this.sendRelease(key, id);
        return this.acquireLocal(key, limit, { signal, timeoutMs: deadline - Date.now() });
      }
      if (reply === GAVE_UP) return this.giveUp(key, id, signal);
      const replied = arrayReply(reply); // [granted, count]
      const granted = numberAt(replied, 0);
      const rank = numberAt(replied, 1);
      if (granted === 1) {
        if (signal?.aborted) return this.giveUp(key, id, signal);
        return this.grant({ id, key, inRedis: true, releaseLocal: this.local.hold(key) }, signal);
      }
      if (Date.now() >= deadline || signal?.aborted) return this.giveUp(key, id, signal);
      await this.waiters.nap(key, Math.min(deadline - Date.now(), rank < limit ? POLL_FRONT_MS : POLL_BACK_MS), signal);
    }
  }

  /** Called when Redis is back: registers and renews every permit held, resends lost releases. */
  onUp(): void {
    for (const [id, key] of this.unsentReleases) {
      this.unsentReleases.delete(id);
      this.sendRelease(key, id);
    }
    void this.renew();
  }

  /** Wakes this process's waiters on `key` (a release was announced). */
  wake(key: string): void {
    this.waiters.wake(key);
  }

  /** Releases every permit this process holds (close); resolves when Redis confirmed or failed. */
  async close(): Promise<void> {
    clearInterval(this.renewTimer);
    const sends = [...this.held.values()].map((h) => this.release(h));
    await Promise.allSettled(sends);
  }

  private async acquireLocal(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined> {
    this.stats.fallbacks++;
    const permit = await this.local.acquire(key, limit, opts);
    if (permit === undefined) return undefined;
    const held: Held = { id: newId(), key, inRedis: false, releaseLocal: () => permit.release() };
    if (this.link.isUp()) this.hold(held).catch(() => {}); // Redis came back while this one waited
    return this.grant(held, opts.signal);
  }

  private grant(held: Held, signal: AbortLike | undefined): Permit {
    this.held.set(held.id, held);
    return makePermit(() => void this.release(held), signal);
  }

  private giveUp(key: string, id: string, signal: AbortLike | undefined): undefined {
    // The withdrawal runs after any attempt still in flight on the same connection, so it also undoes a grant
    // that arrived too late.
    this.sendRelease(key, id);
    if (signal?.aborted) this.stats.acquireAborts++;
    else this.stats.acquireTimeouts++;
    return undefined;
  }

  private release(held: Held): Promise<void> {
    if (!this.held.delete(held.id)) return Promise.resolve(); // released already (by close, or twice)
    held.releaseLocal();
    return held.inRedis ? this.sendRelease(held.key, held.id) : Promise.resolve();
  }

  private async sendRelease(key: string, id: string): Promise<void> {
    const [holders, queue, alive] = this.keys(key);
    const message = JSON.stringify({ t: 'sem', k: key });
    try {
      await this.link.script(SEM_RELEASE, [holders, queue, alive], [id, this.link.channel, message]);
    } catch {
      this.unsentReleases.set(id, key);
    }
  }

  /** Renews (or, after an outage, registers) every held permit's lease. */
  private async renew(): Promise<void> {
    if (!this.link.isUp()) return;
    await Promise.allSettled([...this.held.values()].map((h) => this.hold(h)));
  }

  private async hold(held: Held): Promise<void> {
    const wasInRedis = held.inRedis;
    held.inRedis = true; // from now on a release must reach Redis, even if this call's answer is lost
    const [holders] = this.keys(held.key);
    const valid = await this.link.script(SEM_HOLD, [holders], [held.id, this.opts.leaseMs, this.keyTtlMs]);
    // Still held in this process: re-registered either way, but a lapsed lease (a long stall, or Redis lost
    // its data) means the limit may have been exceeded meanwhile, which metrics should show.
    if (valid === 0 && wasInRedis && this.held.has(held.id)) this.stats.leasesLost++;
    // A release that raced with this call ran after it on the same connection; nothing to undo.
  }

  private keys(key: string): [string, string, string, string] {
    // One {hash tag} per semaphore so its keys share a Cluster slot.
    const base = `${this.opts.prefix}sem:{${key}}:`;
    return [base + 'holders', base + 'queue', base + 'alive', base + 'ticket'];
  }
}
