/**
 * Per-process idempotent replay: the memory store's, and the Redis store's fallback while Redis is unavailable.
 * One entry per request_id: in progress (with the callers waiting for it) or done (the response, kept for
 * replay_ttl_s). Stored bodies are bounded in total so a burst of large responses cannot exhaust the process.
 */
import type { AbortLike } from '../abort.js';
import type { ReplayBegin, ReplayLease, StoreStats } from './types.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import { onAbort, replayKept } from './util.js';

/**
 * What an entry costs besides its answer's bytes, counted against replay_cache_mb: its key and hash, the entry
 * and the answer's Buffer objects, and its places in the two tables, about 1 KB of JS heap as measured under S1
 * (where the answers themselves are smaller than that). Without it 16 MB of small answers held twice that.
 */
const ENTRY_BYTES = 1024;

interface Pending {
  state: 'pending';
  hash: string;
  waiters: Set<() => void>;
}

interface Done {
  state: 'done';
  hash: string;
  body: string | AnswerBody;
  /** What the entry keeps alive (util.ts replayKept), counted against the cache's bound. */
  bytes: number;
  /** Date.now() after which the entry is gone. No timer per entry: see expire(). */
  expiresAt: number;
}

interface LocalReplayLimits {
  ttlMs: number;
  /** replay_max_bytes: larger responses are not stored. */
  maxBytes: number;
  /** Total bytes of stored responses; the oldest are dropped beyond it. */
  capBytes: number;
}

export class LocalReplay {
  private readonly entries = new Map<string, Pending | Done>();
  /**
   * Stored answers, oldest first: every entry lives the same ttl, so the oldest is always the next to expire
   * or to be evicted, and a queue taken from its head does both in constant time. (A Set iterated from its
   * start walks over every entry deleted since its last compaction: all the evicted ones, under S1.)
   */
  private readonly doneOrder = new DoneQueue();
  private bytes = 0;

  constructor(
    private readonly limits: LocalReplayLimits,
    private readonly stats: StoreStats,
  ) {}

  async begin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin> {
    let waited = false;
    for (;;) {
      if (signal?.aborted) return { kind: 'aborted' };
      this.expire();
      const entry = this.entries.get(requestId);
      if (entry === undefined) return { kind: 'compute', lease: this.start(requestId, bodyHash) };
      if (entry.hash !== bodyHash) {
        this.stats.replayConflicts++;
        return { kind: 'conflict' };
      }
      if (entry.state === 'done') {
        this.stats.replayHits++;
        return { kind: 'hit', body: entry.body };
      }
      if (!waited) this.stats.replayWaits++;
      waited = true;
      // Woken by finish/abandon, then look again: an abandoned entry is gone and this caller may compute.
      await new Promise<void>((resolve) => {
        let unlisten = (): void => {};
        const wake = (): void => {
          entry.waiters.delete(wake);
          unlisten();
          resolve();
        };
        entry.waiters.add(wake);
        unlisten = onAbort(signal, wake);
      });
    }
  }

  /** Abandons every computation in progress (close): waiters compute themselves. */
  abandonAll(): void {
    for (const [rid, entry] of this.entries) if (entry.state === 'pending') this.settle(rid, entry, undefined);
  }

  /** Drops every stored response (close). */
  clear(): void {
    this.abandonAll();
    this.entries.clear();
    this.doneOrder.clear();
    this.bytes = 0;
  }

  private start(requestId: string, hash: string): ReplayLease {
    const entry: Pending = { state: 'pending', hash, waiters: new Set() };
    this.entries.set(requestId, entry);
    return {
      finish: async (body) => this.settle(requestId, entry, body),
      abandon: async () => this.settle(requestId, entry, undefined),
    };
  }

  /** Ends a computation once (later calls, e.g. after close, do nothing) and wakes its waiters. */
  private settle(requestId: string, entry: Pending, answer: string | AnswerBody | undefined): void {
    if (this.entries.get(requestId) !== entry) return;
    this.entries.delete(requestId);
    if (answer !== undefined) {
      const kept = replayKept(answer, this.limits.maxBytes);
      if (kept === undefined) this.stats.replayTooLarge++;
      else this.store(requestId, entry.hash, kept.body, kept.bytes);
    }
    for (const wake of [...entry.waiters]) wake();
  }

  private store(requestId: string, hash: string, body: string | AnswerBody, answerBytes: number): void {
    this.expire();
    const bytes = answerBytes + ENTRY_BYTES;
    // One entry larger than the whole cache would evict every other one and then itself.
    if (bytes > this.limits.capBytes) {
      this.stats.replayTooLarge++;
      return;
    }
    const done: Done = { state: 'done', hash, body, bytes, expiresAt: Date.now() + this.limits.ttlMs };
    this.entries.set(requestId, done);
    this.doneOrder.push(requestId, done);
    this.bytes += bytes;
    this.stats.replayStored++;
    while (this.bytes > this.limits.capBytes) {
      const oldest = this.doneOrder.shift();
      if (oldest === undefined) break;
      if (this.drop(oldest.rid, oldest.entry)) this.stats.replayEvicted++;
    }
  }

  /**
   * Drops the expired entries. Every entry lives the same ttl, so the oldest stored expires first: the sweep
   * stops at the first live one. Why not a timer per entry: at thousands of small batches a second that is
   * thousands of live timers, each one more object for the GC to carry (S1, docs/performance.md#targets).
   */
  private expire(): void {
    const now = Date.now();
    for (;;) {
      const oldest = this.doneOrder.peek();
      if (oldest === undefined || oldest.entry.expiresAt > now) return;
      this.doneOrder.shift();
      this.drop(oldest.rid, oldest.entry);
    }
  }

  /** Drops `entry` if it is still the one stored for `requestId`; true if so. */
  private drop(requestId: string, entry: Done): boolean {
    if (this.entries.get(requestId) !== entry) return false;
    this.entries.delete(requestId);
    this.bytes -= entry.bytes;
    return true;
  }
}

/** A FIFO of stored answers: pushed at the tail, taken from the head; the array is compacted now and then. */
class DoneQueue {
  private items: ({ rid: string; entry: Done } | undefined)[] = [];
  private head = 0;

  push(rid: string, entry: Done): void {
    this.items.push({ rid, entry });
  }

  peek(): { rid: string; entry: Done } | undefined {
    return this.items[this.head];
  }

  shift(): { rid: string; entry: Done } | undefined {
    const item = this.items[this.head];
    if (item === undefined) return undefined;
    this.items[this.head++] = undefined; // released for the GC
    // Compacted once the taken part is most of the array: amortized constant time per item.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
