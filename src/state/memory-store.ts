/** The default store: everything in this process, so limits, replay, counters and shared values are its own. */
import { liveEntry, LocalClaims, type Entry } from './claims.js';
import { LocalReplay, replayLimits } from './replay.js';
import { LocalSemaphores } from './semaphores.js';
import type { CacheEntries, CacheEntriesOptions, CappedLists, Counters, SharedListener, SharedValues, StateConfig, StateLog, Store, TokenBuckets, TokenTake } from './types.js';
import { StoreBase } from './store-base.js';
import { LocalCache } from './cache-entries.js';
import type { Listeners } from './util.js';

const TAKEN: TokenTake = { ok: true };

class LocalCounters implements Counters {
  private readonly totals = new Map<string, Map<string, number>>();

  incr(key: string, field: string, by = 1): void {
    if (!Number.isFinite(by)) return; // as the Redis store: a NaN would poison the total for good
    let fields = this.totals.get(key);
    if (fields === undefined) this.totals.set(key, (fields = new Map()));
    fields.set(field, (fields.get(field) ?? 0) + by);
  }

  async read(key: string): Promise<Record<string, number>> {
    return Object.fromEntries(this.totals.get(key) ?? []);
  }

  async flush(): Promise<void> {}
}

class LocalShared implements SharedValues {
  private readonly values = new Map<string, Entry<string>>();

  constructor(private readonly listeners: Listeners<Parameters<SharedListener>>) {}

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.values.set(key, { value, expiresAt: Date.now() + ttlMs });
    this.listeners.emit(key, value);
  }

  async delete(key: string): Promise<void> {
    if (this.values.delete(key)) this.listeners.emit(key, undefined);
  }

  async get(key: string): Promise<string | undefined> {
    return liveEntry(this.values, key, Date.now())?.value;
  }

  onChange(listener: SharedListener): () => void {
    return this.listeners.add(listener);
  }
}

class LocalLists implements CappedLists {
  private readonly lists = new Map<string, Entry<string[]>>();

  async push(key: string, value: string, max: number, ttlMs: number): Promise<void> {
    const now = Date.now();
    let list = liveEntry(this.lists, key, now);
    if (list === undefined) this.lists.set(key, (list = { value: [], expiresAt: 0 }));
    list.value.push(value);
    // One at a time, so a list never holds more than max + 1: the cost of a push stays constant.
    while (list.value.length > Math.max(0, max)) list.value.shift();
    list.expiresAt = now + ttlMs;
  }

  async read(key: string): Promise<string[]> {
    return [...(liveEntry(this.lists, key, Date.now())?.value ?? [])];
  }
}

export class MemoryStore extends StoreBase implements Store {
  readonly kind = 'memory' as const;
  readonly permits = new LocalSemaphores(this.counts);
  readonly tokens: TokenBuckets = { take: () => Promise.resolve(TAKEN) };
  readonly counters = new LocalCounters();
  readonly shared = new LocalShared(this.sharedListeners);
  readonly lists = new LocalLists();
  readonly claims: LocalClaims;
  readonly replay: LocalReplay;

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

  cacheEntries(opts: CacheEntriesOptions): CacheEntries {
    return new LocalCache(opts);
  }

  async close(): Promise<void> {
    this.replay.clear();
    this.claims.clear();
  }
}
