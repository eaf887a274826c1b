/**
 * The response cache in Redis (docs/cache.md), shared by every replica with the same Redis and key_prefix:
 * `cache:e:<digest>` holds an entry (SET PX: Redis drops it after the TTL), `cache:{gen}:<scope>` a scope's
 * generation (INCR by an admin DELETE; the `{gen}` hash tag keeps every generation in one Cluster slot, so one
 * MGET reads them all). Entries are read one GET each, which a Cluster routes to each key's own node.
 *
 * Any failure (Redis down, a timeout) answers `undefined` / `false` at once, through RedisLink's short command
 * timeout: the batch treats it as a miss and is never held up or failed by the cache.
 */
import type { RedisLink } from './redis-link.js';
import type { CacheEntries } from './types.js';

export class RedisCache implements CacheEntries {
  readonly kind = 'redis' as const;

  constructor(
    private readonly link: RedisLink,
    private readonly prefix: string,
  ) {}

  async generations(scopes: readonly string[]): Promise<string[] | undefined> {
    if (scopes.length === 0) return [];
    try {
      const values = await this.link.run((c) => c.mget(...scopes.map((s) => this.genKey(s))));
      return values.map((v) => v ?? '0');
    } catch {
      return undefined;
    }
  }

  async get(keys: readonly string[]): Promise<(Buffer | undefined)[] | undefined> {
    try {
      const values = await Promise.all(keys.map((k) => this.link.run((c) => c.getBuffer(this.entryKey(k)))));
      return values.map((v) => v ?? undefined);
    } catch {
      return undefined;
    }
  }

  async set(key: string, value: Buffer, ttlMs: number): Promise<boolean> {
    try {
      // Whole milliseconds: SET PX takes an integer.
      await this.link.run((c) => c.set(this.entryKey(key), value, 'PX', Math.max(1, Math.ceil(ttlMs))));
      return true;
    } catch {
      return false;
    }
  }

  async bump(scope: string): Promise<void> {
    await this.link.run((c) => c.incr(this.genKey(scope)));
  }

  held(): { bytes: number; entries: number; evicted: number } {
    return { bytes: 0, entries: 0, evicted: 0 };
  }

  private entryKey(digest: string): string {
    return `${this.prefix}cache:e:${digest}`;
  }

  private genKey(scope: string): string {
    return `${this.prefix}cache:{gen}:${scope}`;
  }
}
