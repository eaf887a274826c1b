/**
 * The response cache in this process (docs/cache.md): entries by key in least-recently-used order, their bytes
 * bounded by cache.max_mb, each dropped once its TTL passed. A Map keeps insertion order, so a hit moves its
 * entry to the end (delete + set) and eviction takes from the start: constant time per operation.
 */
import type { CacheEntries, CacheEntriesOptions } from './types.js';

/**
 * What an entry costs besides its value: the key string (a 43-character digest), the entry object and its
 * place in the Map, about this much heap; counted so a flood of tiny entries still respects the bound.
 */
const ENTRY_BYTES = 256;

interface Entry {
  value: Buffer;
  expiresAt: number;
}

export class LocalCache implements CacheEntries {
  readonly kind = 'memory' as const;
  private readonly entries = new Map<string, Entry>();
  private readonly gens = new Map<string, number>();
  private bytes = 0;
  private evicted = 0;

  constructor(
    private readonly opts: CacheEntriesOptions,
    private readonly now: () => number = Date.now,
  ) {}

  async generations(scopes: readonly string[]): Promise<string[]> {
    return scopes.map((s) => String(this.gens.get(s) ?? 0));
  }

  async get(keys: readonly string[]): Promise<(Buffer | undefined)[]> {
    const now = this.now();
    return keys.map((k) => {
      const e = this.entries.get(k);
      if (e === undefined) return undefined;
      this.entries.delete(k);
      if (e.expiresAt <= now) {
        this.bytes -= cost(k, e);
        return undefined;
      }
      this.entries.set(k, e); // the most recently used now
      return e.value;
    });
  }

  async set(key: string, value: Buffer, ttlMs: number): Promise<boolean> {
    const entry: Entry = { value, expiresAt: this.now() + ttlMs };
    const bytes = cost(key, entry);
    // One entry larger than the whole cache would evict every other one and then itself.
    if (bytes > this.opts.capBytes) return false;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.bytes -= cost(key, old);
    }
    this.entries.set(key, entry);
    this.bytes += bytes;
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.opts.capBytes) break;
      this.entries.delete(k);
      this.bytes -= cost(k, e);
      this.evicted++;
    }
    return true;
  }

  async bump(scope: string): Promise<void> {
    this.gens.set(scope, (this.gens.get(scope) ?? 0) + 1);
    // Everything is unreachable now: give the memory back at once rather than through the LRU.
    if (scope === '*') {
      this.entries.clear();
      this.bytes = 0;
    }
  }

  held(): { bytes: number; entries: number; evicted: number } {
    return { bytes: this.bytes, entries: this.entries.size, evicted: this.evicted };
  }
}

function cost(key: string, e: Entry): number {
  return e.value.length + key.length + ENTRY_BYTES;
}
