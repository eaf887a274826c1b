/**
 * FIFO semaphores, per process (LocalSemaphores, which also counts the Redis permits held so that during an outage
 * the limit covers all in flight) or cluster-wide (RedisSemaphores): a waiter retries when a release is announced
 * and polls as a safety net (a lapsed lease announces nothing). Permits granted during an outage are registered in
 * Redis (SEM_HOLD) once it is back.
 */
import type { AbortLike } from '../abort.js';
import type { RedisLink } from './redis-link.js';
import { arrayReply, numberAt, SEM_ACQUIRE, SEM_HOLD, SEM_RELEASE } from './redis-scripts.js';
import type { AcquireOptions, Permit, Permits, StoreStats } from './types.js';
import { abortableDelay, GAVE_UP, leaseRenewer, newId, onAbort, raceAbort, Wakers } from './util.js';

interface Slot {
  held: number;
  limit: number;
  queue: Map<number, () => void>;
}

/** An idempotent Permit that also releases itself when `signal` aborts, so a cancelled request never leaks it. */
export function makePermit(onRelease: () => void, signal?: AbortLike): Permit {
  let released = false;
  let unlisten = (): void => {};
  const release = (): void => {
    if (released) return;
    released = true;
    unlisten();
    onRelease();
  };
  unlisten = onAbort(signal, release);
  return { release };
}

export class LocalSemaphores implements Permits {
  private readonly slots = new Map<string, Slot>();
  private seq = 0;

  constructor(private readonly stats: StoreStats) {}

  acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined> {
    const { signal, timeoutMs } = opts;
    if (signal?.aborted) {
      this.stats.acquireAborts++;
      return Promise.resolve(undefined);
    }
    const slot = this.slot(key);
    slot.limit = limit;
    this.pump(slot); // the limit may have been raised since the last call
    // Nobody barges past a queued waiter.
    if (slot.queue.size === 0 && slot.held < limit) {
      slot.held++;
      return Promise.resolve(this.permit(key, slot, signal));
    }
    if (!(timeoutMs > 0)) {
      this.stats.acquireTimeouts++;
      this.gc(key, slot);
      return Promise.resolve(undefined);
    }
    return new Promise((resolve) => {
      const id = ++this.seq;
      const wait = abortableDelay(timeoutMs, signal);
      const settle = (granted: boolean): void => {
        wait.cancel();
        slot.queue.delete(id);
        // Granted in the tick the signal aborted: the slot goes straight back, reported as an abort.
        if (granted && !signal?.aborted) return resolve(this.permit(key, slot, signal));
        if (granted) this.releaseOne(key, slot);
        if (signal?.aborted) this.stats.acquireAborts++;
        else this.stats.acquireTimeouts++;
        this.gc(key, slot);
        resolve(undefined);
      };
      slot.queue.set(id, () => settle(true));
      void wait.promise.then(() => {
        if (slot.queue.has(id)) settle(false);
      });
    });
  }

  /** Counts a permit Redis granted, without checking the limit; returns its idempotent release. */
  hold(key: string): () => void {
    const slot = this.slot(key);
    slot.held++;
    return makePermit(() => this.releaseOne(key, slot)).release;
  }

  private permit(key: string, slot: Slot, signal: AbortLike | undefined): Permit {
    return makePermit(() => this.releaseOne(key, slot), signal);
  }

  private releaseOne(key: string, slot: Slot): void {
    slot.held--;
    this.pump(slot);
    this.gc(key, slot);
  }

  /** Synchronous, so no newcomer can take a slot in between. */
  private pump(slot: Slot): void {
    while (slot.held < slot.limit) {
      const first = slot.queue.entries().next();
      if (first.done === true) break;
      const [id, grant] = first.value;
      slot.queue.delete(id);
      slot.held++;
      grant();
    }
  }

  private slot(key: string): Slot {
    let slot = this.slots.get(key);
    if (slot === undefined) this.slots.set(key, (slot = { held: 0, limit: 0, queue: new Map() }));
    return slot;
  }

  private gc(key: string, slot: Slot): void {
    if (slot.held === 0 && slot.queue.size === 0 && this.slots.get(key) === slot) this.slots.delete(key);
  }
}

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
  inRedis: boolean;
  releaseLocal: () => void;
}

export class RedisSemaphores implements Permits {
  private readonly waiters = new Wakers();
  private readonly held = new Map<string, Held>();
  /** Releases Redis did not confirm: sent again once it is back, so no slot waits for a lease to lapse. */
  private readonly unsentReleases = new Map<string, string>();
  private readonly renewTimer: NodeJS.Timeout;
  private readonly keyTtlMs: number;

  constructor(
    private readonly link: RedisLink,
    private readonly local: LocalSemaphores,
    private readonly stats: StoreStats,
    private readonly opts: { prefix: string; leaseMs: number },
  ) {
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
        const budget = deadline - Date.now();
        reply = await raceAbort(attempt, first ? Math.max(budget, FIRST_ATTEMPT_MS) : budget, signal);
      } catch {
        // Withdrawn at best effort (the queue lease covers a lost withdrawal); locally for the time left.
        this.sendRelease(key, id);
        return this.acquireLocal(key, limit, { signal, timeoutMs: deadline - Date.now() });
      }
      if (reply === GAVE_UP) return this.giveUp(key, id, signal);
      const replied = arrayReply(reply);
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

  onUp(): void {
    for (const [id, key] of this.unsentReleases) {
      this.unsentReleases.delete(id);
      this.sendRelease(key, id);
    }
    void this.renew();
  }

  wake(key: string): void {
    this.waiters.wake(key);
  }

  async close(): Promise<void> {
    clearInterval(this.renewTimer);
    await Promise.allSettled([...this.held.values()].map((h) => this.release(h)));
  }

  private async acquireLocal(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined> {
    this.stats.fallbacks++;
    const permit = await this.local.acquire(key, limit, opts);
    if (permit === undefined) return undefined;
    const held: Held = { id: newId(), key, inRedis: false, releaseLocal: () => permit.release() };
    if (this.link.isUp()) this.hold(held).catch(() => {}); // Redis came back meanwhile
    return this.grant(held, opts.signal);
  }

  private grant(held: Held, signal: AbortLike | undefined): Permit {
    this.held.set(held.id, held);
    return makePermit(() => void this.release(held), signal);
  }

  private giveUp(key: string, id: string, signal: AbortLike | undefined): undefined {
    // Runs after any attempt still in flight on the same connection: it also undoes a grant that came too late.
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
    try {
      await this.link.script(SEM_RELEASE, [holders, queue, alive], [id, this.link.channel, JSON.stringify({ t: 'sem', k: key })]);
    } catch {
      this.unsentReleases.set(id, key);
    }
  }

  private async renew(): Promise<void> {
    if (!this.link.isUp()) return;
    await Promise.allSettled([...this.held.values()].map((h) => this.hold(h)));
  }

  private async hold(held: Held): Promise<void> {
    const wasInRedis = held.inRedis;
    held.inRedis = true; // a release must reach Redis even if this call's answer is lost
    const [holders] = this.keys(held.key);
    const valid = await this.link.script(SEM_HOLD, [holders], [held.id, this.opts.leaseMs, this.keyTtlMs]);
    // A lapsed lease (a long stall, or Redis lost its data): the limit may have been exceeded meanwhile.
    if (valid === 0 && wasInRedis && this.held.has(held.id)) this.stats.leasesLost++;
  }

  private keys(key: string): [string, string, string, string] {
    // One {hash tag}: one Cluster slot.
    const base = `${this.opts.prefix}sem:{${key}}:`;
    return [base + 'holders', base + 'queue', base + 'alive', base + 'ticket'];
  }
}
