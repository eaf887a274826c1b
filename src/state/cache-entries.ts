/** The response cache's entries (docs/cache.md), in this process or in Redis. */
import type { RedisLink } from './redis-link.js';
import type { CacheEntries, CacheEntriesOptions, HeldEntries } from './types.js';

/** An entry's heap besides its value and key, so a flood of tiny entries still respects the bound. */
const ENTRY_BYTES = 256;

interface Entry {
  value: Buffer;
  expiresAt: number;
}

/** An LRU bounded by cache.max_mb: a hit moves its entry to the Map's end, eviction takes from its start. */
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
      this.entries.set(k, e);
      return e.value;
    });
  }

  async set(key: string, value: Buffer, ttlMs: number): Promise<boolean> {
    const entry: Entry = { value, expiresAt: this.now() + ttlMs };
    const bytes = cost(key, entry);
    if (bytes > this.opts.capBytes) return false; // it would evict every other one and then itself
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

  held(): HeldEntries {
    return { bytes: this.bytes, entries: this.entries.size, evicted: this.evicted };
  }
}

function cost(key: string, e: Entry): number {
  return e.value.length + key.length + ENTRY_BYTES;
}

/**
 * Shared by every replica: the `{gen}` hash tag keeps every generation in one Cluster slot, so one MGET reads
 * them all; entries are read one GET each, which a Cluster routes to each key's own node.
 */
export class RedisCache implements CacheEntries {
  readonly kind = 'redis' as const;

  constructor(
    private readonly link: RedisLink,
    private readonly prefix: string,
  ) {}

  async generations(scopes: readonly string[]): Promise<string[] | undefined> {
    if (scopes.length === 0) return [];
    try {
      return (await this.link.run((c) => c.mget(...scopes.map((s) => this.genKey(s))))).map((v) => v ?? '0');
    } catch {
      return undefined;
    }
  }

  async get(keys: readonly string[]): Promise<(Buffer | undefined)[] | undefined> {
    try {
      return (await Promise.all(keys.map((k) => this.link.run((c) => c.getBuffer(this.entryKey(k)))))).map((v) => v ?? undefined);
    } catch {
      return undefined;
    }
  }

  async set(key: string, value: Buffer, ttlMs: number): Promise<boolean> {
    try {
      await this.link.run((c) => c.set(this.entryKey(key), value, 'PX', Math.max(1, Math.ceil(ttlMs))));
      return true;
    } catch {
      return false;
    }
  }

  async bump(scope: string): Promise<void> {
    await this.link.run((c) => c.incr(this.genKey(scope)));
  }

  held(): HeldEntries {
    return { bytes: 0, entries: 0, evicted: 0 };
  }

  private entryKey(digest: string): string {
    return `${this.prefix}cache:e:${digest}`;
  }

  private genKey(scope: string): string {
    return `${this.prefix}cache:{gen}:${scope}`;
  }
}
