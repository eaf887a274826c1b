/**
 * Cluster-wide counters (experiment arms, feedback) as Redis hashes. Increments are summed in this process and
 * sent in one script call per key every FLUSH_MS, so the hot path never waits on Redis. A batch whose answer is
 * lost (timeout, outage) is kept as is and sent again; its sequence number makes Redis apply it exactly once.
 * While Redis is unavailable increments keep accumulating here and reads answer the last totals read plus
 * this process's unsent increments.
 */
import { isCommandError, type RedisLink } from './redis-link.js';
import { COUNTERS_ADD } from './redis-scripts.js';
import type { StoreStats } from './types.js';

const FLUSH_MS = 200;
/** How long Redis remembers a store instance's last applied batch: far longer than any outage it retries after. */
const SEQ_TTL_MS = 7 * 24 * 3600 * 1000;

interface KeyState {
  /** A batch sent without confirmation; immutable until confirmed, since Redis may already have applied it. */
  unconfirmed?: { seq: number; deltas: Map<string, number> };
  /** Increments not sent yet. */
  pending: Map<string, number>;
}

export class RedisCounters {
  private readonly keys = new Map<string, KeyState>();
  /** Last totals read from Redis, per key: what reads answer during an outage. */
  private readonly lastRead = new Map<string, Record<string, number>>();
  private seq = 0;
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly link: RedisLink,
    private readonly stats: StoreStats,
    private readonly prefix: string,
    private readonly origin: string,
    /** Each counters hash expires this long after its last increment (state.counters_ttl_s). */
    private readonly ttlMs: number,
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  incr(key: string, field: string, by: number): void {
    if (!Number.isFinite(by)) return; // Redis would refuse the whole batch, and every later one of this key
    let state = this.keys.get(key);
    if (state === undefined) this.keys.set(key, (state = { pending: new Map() }));
    state.pending.set(field, (state.pending.get(field) ?? 0) + by);
  }

  /** Sends everything pending; flushes run one at a time so each key's batches reach Redis in order. */
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
      this.keys.delete(key); // idle: forget it
      return;
    }
    const args: (string | number)[] = [this.origin, batch.seq, SEQ_TTL_MS, this.ttlMs];
    for (const [field, by] of batch.deltas) args.push(field, String(by));
    try {
      await this.link.script(COUNTERS_ADD, [this.hashKey(key), this.seqKey(key)], args);
    } catch (err) {
      // Redis unavailable: keep the batch for the next flush. Refused (e.g. the key holds another type):
      // retrying cannot help, and would hold back every later increment of this key.
      if (!isCommandError(err)) throw err;
    }
    state.unconfirmed = undefined;
  }

  private hashKey(key: string): string {
    return `${this.prefix}counters:{${key}}`;
  }

  private seqKey(key: string): string {
    return `${this.prefix}counters:{${key}}:seq`;
  }
}
