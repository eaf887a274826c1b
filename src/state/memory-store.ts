/** The default store: everything in this process, so limits, replay, counters and shared values are its own. */
import { liveEntry, LocalClaims, type Entry } from './claims.js';
import { LocalReplay, replayLimits } from './replay.js';
import { LocalSemaphores } from './semaphores.js';
import type { CacheEntries, CacheEntriesOptions, StateConfig, StateLog, Store, TokenTake } from './types.js';
import { StoreBase } from './store-base.js';
import { LocalCache } from './cache-entries.js';

const TAKEN: TokenTake = { ok: true };

export class MemoryStore extends StoreBase implements Store {
  readonly kind = 'memory' as const;
  protected readonly semaphores = new LocalSemaphores(this.counts);
  private readonly counters = new Map<string, Map<string, number>>();
  private readonly shared = new Map<string, Entry<string>>();
  private readonly lists = new Map<string, Entry<string[]>>();
  protected readonly claims: LocalClaims;
  protected readonly replay: LocalReplay;

  constructor(config: StateConfig, log: StateLog) {
    super(log);
    this.claims = new LocalClaims(config.index_max_entries);
    this.replay = new LocalReplay(replayLimits(config), this.counts);
  }

  isUp(): boolean {
    return true;
  }

  onUpChange(_listener: (up: boolean) => void): () => void {
    return () => {};
  }

  takeTokens(): Promise<TokenTake | undefined> {
    return Promise.resolve(TAKEN);
  }

  incr(key: string, field: string, by = 1): void {
    if (!Number.isFinite(by)) return; // as the Redis store: a NaN would poison the total for good
    let fields = this.counters.get(key);
    if (fields === undefined) this.counters.set(key, (fields = new Map()));
    fields.set(field, (fields.get(field) ?? 0) + by);
  }

  async readCounters(key: string): Promise<Record<string, number>> {
    return Object.fromEntries(this.counters.get(key) ?? []);
  }

  async flush(): Promise<void> {}

  async setShared(key: string, value: string, ttlMs: number): Promise<void> {
    this.shared.set(key, { value, expiresAt: Date.now() + ttlMs });
    this.sharedListeners.emit(key, value);
  }

  async deleteShared(key: string): Promise<void> {
    if (this.shared.delete(key)) this.sharedListeners.emit(key, undefined);
  }

  async getShared(key: string): Promise<string | undefined> {
    return liveEntry(this.shared, key, Date.now())?.value;
  }

  cacheEntries(opts: CacheEntriesOptions): CacheEntries {
    return new LocalCache(opts);
  }

  async close(): Promise<void> {
    this.replay.clear();
    this.claims.clear();
  }

  async pushCapped(key: string, value: string, max: number, ttlMs: number): Promise<void> {
    const now = Date.now();
    let list = liveEntry(this.lists, key, now);
    if (list === undefined) this.lists.set(key, (list = { value: [], expiresAt: 0 }));
    list.value.push(value);
    // One at a time, so a list never holds more than max + 1: the cost of a push stays constant.
    while (list.value.length > Math.max(0, max)) list.value.shift();
    list.expiresAt = now + ttlMs;
  }

  async readList(key: string): Promise<string[]> {
    return [...(liveEntry(this.lists, key, Date.now())?.value ?? [])];
  }
}
