/** Set-once values and bounded sets with a TTL (docs/experiments.md#what-the-gateway-stores). */
import type { RedisLink } from './redis-link.js';
import { CLAIM, CLAIM_RELEASE, SET_ADD } from './redis-scripts.js';
import type { ClaimResult, Claims, StoreStats } from './types.js';

export interface Entry<T> {
  value: T;
  expiresAt: number;
}

/** The entry at `key` while it lives; an expired one is deleted. */
export function liveEntry<T>(map: Map<string, Entry<T>>, key: string, now: number): Entry<T> | undefined {
  const e = map.get(key);
  if (e === undefined) return undefined;
  if (e.expiresAt > now) return e;
  map.delete(key);
  return undefined;
}

/** In this process (and the Redis store's fallback): past state.index_max_entries the oldest go first. */
export class LocalClaims implements Claims {
  private readonly claims = new Map<string, Entry<string>>();
  private readonly sets = new Map<string, Entry<Set<string>>>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  async claim(key: string, value: string, ttlMs: number): Promise<ClaimResult> {
    const hit = this.live(this.claims, key);
    if (hit !== undefined) return { first: false, value: hit.value };
    this.put(this.claims, key, { value, expiresAt: this.now() + ttlMs });
    return { first: true, value };
  }

  async read(key: string): Promise<string | undefined> {
    return this.live(this.claims, key)?.value;
  }

  async release(key: string, value: string): Promise<void> {
    if (this.live(this.claims, key)?.value === value) this.claims.delete(key);
  }

  async addMember(key: string, member: string, ttlMs: number, maxMembers: number): Promise<boolean> {
    const hit = this.live(this.sets, key);
    const expiresAt = this.now() + ttlMs;
    if (hit === undefined) {
      this.put(this.sets, key, { value: new Set([member]), expiresAt });
      return true;
    }
    hit.expiresAt = expiresAt;
    if (hit.value.has(member)) return true;
    if (hit.value.size >= maxMembers) return false;
    hit.value.add(member);
    return true;
  }

  async members(key: string): Promise<string[]> {
    return [...(this.live(this.sets, key)?.value ?? [])];
  }

  clear(): void {
    this.claims.clear();
    this.sets.clear();
  }

  private live<T>(map: Map<string, Entry<T>>, key: string): Entry<T> | undefined {
    return liveEntry(map, key, this.now());
  }

  private put<T>(map: Map<string, Entry<T>>, key: string, e: Entry<T>): void {
    map.set(key, e);
    // Insertion order is age order.
    while (map.size > this.maxEntries) {
      const oldest = map.keys().next();
      if (oldest.done === true) break;
      map.delete(oldest.value);
    }
  }
}

/**
 * Shared by every replica. While Redis is unavailable LocalClaims answers: a step replayed to another replica
 * during an outage may count twice (docs/experiments.md#what-the-gateway-stores).
 */
export class RedisClaims implements Claims {
  constructor(
    private readonly link: RedisLink,
    private readonly local: LocalClaims,
    private readonly stats: StoreStats,
    private readonly prefix: string,
  ) {}

  async claim(key: string, value: string, ttlMs: number): Promise<ClaimResult> {
    try {
      const r = await this.link.script(CLAIM, [`${this.prefix}claim:${key}`], [value, Math.max(1, Math.ceil(ttlMs))]);
      if (Array.isArray(r) && r.length === 2 && typeof r[1] === 'string') return { first: r[0] === 1, value: r[1] };
    } catch {
      // answered locally below
    }
    this.stats.fallbacks++;
    return this.local.claim(key, value, ttlMs);
  }

  async read(key: string): Promise<string | undefined> {
    try {
      return (await this.link.run((c) => c.get(`${this.prefix}claim:${key}`))) ?? this.local.read(key);
    } catch {
      this.stats.fallbacks++;
      return this.local.read(key);
    }
  }

  async release(key: string, value: string): Promise<void> {
    void this.local.release(key, value); // done at once (a map); not awaited, so the release below goes out in call order
    try {
      await this.link.script(CLAIM_RELEASE, [`${this.prefix}claim:${key}`], [value]);
    } catch {
      this.stats.fallbacks++;
    }
  }

  async addMember(key: string, member: string, ttlMs: number, maxMembers: number): Promise<boolean> {
    try {
      return (await this.link.script(SET_ADD, [`${this.prefix}set:${key}`], [member, Math.max(1, Math.ceil(ttlMs)), maxMembers])) !== 0;
    } catch {
      this.stats.fallbacks++;
    }
    return this.local.addMember(key, member, ttlMs, maxMembers);
  }

  async members(key: string): Promise<string[]> {
    try {
      const remote = await this.link.run((c) => c.smembers(`${this.prefix}set:${key}`));
      const local = await this.local.members(key);
      return local.length === 0 ? remote : [...new Set([...remote, ...local])];
    } catch {
      this.stats.fallbacks++;
      return this.local.members(key);
    }
  }
}
