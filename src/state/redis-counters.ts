/**
 * Cluster-wide counters as Redis hashes, summed here and sent every FLUSH_MS. A batch whose answer is lost is sent
 * again as is; its sequence number makes Redis apply it once.
 */
import { isCommandError, type RedisLink } from './redis-link.js';
import { COUNTERS_ADD } from './redis-scripts.js';
import type { Counters, StoreStats } from './types.js';

const FLUSH_MS = 200;
/** Far longer than any outage a batch is retried after. */
const SEQ_TTL_MS = 7 * 24 * 3600 * 1000;

interface KeyState {
  /** Sent, unconfirmed: immutable, since Redis may already have applied it. */
  unconfirmed?: { seq: number; deltas: Map<string, number> };
  pending: Map<string, number>;
}

export class RedisCounters implements Counters {
  private readonly keys = new Map<string, KeyState>();
  /** What reads answer during an outage. */
  private readonly lastRead = new Map<string, Record<string, number>>();
  private seq = 0;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly link: RedisLink,
    private readonly stats: StoreStats,
    private readonly prefix: string,
    private readonly origin: string,
    private readonly ttlMs: number,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  incr(key: string, field: string, by = 1): void {
    if (!Number.isFinite(by)) return; // Redis would refuse the whole batch, and every later one of this key
    let state = this.keys.get(key);
    if (state === undefined) this.keys.set(key, (state = { pending: new Map() }));
    state.pending.set(field, (state.pending.get(field) ?? 0) + by);
  }

  /** One flush at a time, so each key's batches reach Redis in order. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushOnce());
    return this.flushing;
  }

  async read(key: string): Promise<Record<string, number>> {
    await this.flush();
    let totals: Record<string, number>;
    try {
      const raw = await this.link.run((c) => c.hgetall(this.hashKey(key)));
      totals = Object.fromEntries(Object.entries(raw).map(([f, v]) => [f, Number(v)]));
      this.lastRead.set(key, totals);
    } catch {
      this.stats.fallbacks++;
      totals = this.lastRead.get(key) ?? {};
    }
    const sum = { ...totals };
    const state = this.keys.get(key);
    for (const deltas of [state?.unconfirmed?.deltas, state?.pending]) {
      for (const [field, by] of deltas ?? []) sum[field] = (sum[field] ?? 0) + by;
    }
    return sum;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async flushOnce(): Promise<void> {
    if (!this.link.isUp()) return;
    await Promise.allSettled([...this.keys].map(([key, state]) => this.flushKey(key, state)));
  }

  private async flushKey(key: string, state: KeyState): Promise<void> {
    if (state.unconfirmed === undefined && state.pending.size > 0) {
      state.unconfirmed = { seq: ++this.seq, deltas: state.pending };
      state.pending = new Map();
    }
    const batch = state.unconfirmed;
    if (batch === undefined) {
      this.keys.delete(key);
      return;
    }
    const args: (string | number)[] = [this.origin, batch.seq, SEQ_TTL_MS, this.ttlMs];
    for (const [field, by] of batch.deltas) args.push(field, String(by));
    try {
      await this.link.script(COUNTERS_ADD, [this.hashKey(key), `${this.hashKey(key)}:seq`], args);
    } catch (err) {
      // Unavailable: kept for the next flush. Refused (the key holds another type): retrying would hold back
      // every later increment of this key.
      if (!isCommandError(err)) throw err;
    }
    state.unconfirmed = undefined;
  }

  private hashKey(key: string): string {
    return `${this.prefix}counters:{${key}}`;
  }
}
