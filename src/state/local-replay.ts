/** Per-process idempotent replay: the memory store's, and the Redis store's fallback. */
import type { AbortLike } from '../abort.js';
import type { ReplayBegin, ReplayLease, StoreStats } from './types.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import { Fifo, onAbort, replayKept } from './util.js';

/**
 * An entry's heap besides its answer (key, hash, objects, table slots), about 1 KB as measured under S1; without
 * it 16 MB of small answers held twice that.
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
  /** What the entry keeps alive (replayKept), counted against the cache's bound. */
  bytes: number;
  expiresAt: number;
}

interface LocalReplayLimits {
  ttlMs: number;
  /** replay_max_bytes */
  maxBytes: number;
  /** replay_cache_mb: the oldest are dropped beyond it. */
  capBytes: number;
}

export class LocalReplay {
  private readonly entries = new Map<string, Pending | Done>();
  /**
   * Stored answers, oldest first: with one ttl for all, the head is the next to expire or be evicted. Not a Set:
   * iterated from its start it walks every entry deleted since its last compaction (all the evicted, under S1).
   */
  private readonly doneOrder = new Fifo<{ rid: string; entry: Done }>();
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

  /** Abandons the computations in progress, so their waiters compute themselves. */
  clear(): void {
    for (const [rid, entry] of this.entries) if (entry.state === 'pending') this.settle(rid, entry, undefined);
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

  /** Ends a computation once (later calls, e.g. after close, do nothing). */
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
    this.doneOrder.push({ rid: requestId, entry: done });
    this.bytes += bytes;
    this.stats.replayStored++;
    while (this.bytes > this.limits.capBytes) {
      const oldest = this.doneOrder.shift();
      if (oldest === undefined) break;
      if (this.drop(oldest.rid, oldest.entry)) this.stats.replayEvicted++;
    }
  }

  /**
   * The sweep stops at the first live entry (one ttl for all). Not a timer per entry: at thousands of batches a
   * second that is thousands of live timers for the GC to carry (S1, docs/performance.md#targets).
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

  private drop(requestId: string, entry: Done): boolean {
    if (this.entries.get(requestId) !== entry) return false;
    this.entries.delete(requestId);
    this.bytes -= entry.bytes;
    return true;
  }
}
