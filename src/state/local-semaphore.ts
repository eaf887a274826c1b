/**
 * Per-process FIFO semaphores: the memory store's, and the Redis store's fallback, which also counts the Redis
 * permits this process holds so that during an outage the limit covers all it has in flight.
 */
import type { AbortLike } from '../abort.js';
import type { AcquireOptions, Permit, StoreStats } from './types.js';
import { abortableDelay, onAbort } from './util.js';

interface Slot {
  held: number;
  limit: number;
  /** Waiters in arrival order. */
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

export class LocalSemaphores {
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
