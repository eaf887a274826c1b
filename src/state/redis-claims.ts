/**
 * Set-once values and bounded sets shared by every replica (Redis keys `claim:<key>` and `set:<key>`, each with
 * its TTL), for the experiment recorder's idempotency marks and outcome index. While Redis is unavailable the
 * per-process LocalClaims answers instead: marks made then are this replica's only, so a step replayed to
 * another replica during an outage may count twice (docs/experiments.md#what-the-gateway-stores).
 */
import type { RedisLink } from './redis-link.js';
import { CLAIM, SET_ADD } from './redis-scripts.js';
import type { ClaimResult, LocalClaims } from './local-claims.js';
import type { StoreStats } from './types.js';

export class RedisClaims {
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
      // unavailable: answered locally below
    }
    this.stats.fallbacks++;
    return this.local.claim(key, value, ttlMs);
  }

  async read(key: string): Promise<string | undefined> {
    try {
      const v = await this.link.run((c) => c.get(`${this.prefix}claim:${key}`));
      return v ?? this.local.read(key);
    } catch {
      this.stats.fallbacks++;
      return this.local.read(key);
    }
  }

  async add(key: string, member: string, ttlMs: number, maxMembers: number): Promise<void> {
    try {
      await this.link.script(SET_ADD, [`${this.prefix}set:${key}`], [member, Math.max(1, Math.ceil(ttlMs)), maxMembers]);
      return;
    } catch {
      this.stats.fallbacks++;
    }
    this.local.add(key, member, ttlMs, maxMembers);
  }

  async members(key: string): Promise<string[]> {
    try {
      const remote = await this.link.run((c) => c.smembers(`${this.prefix}set:${key}`));
      const local = this.local.members(key);
      return local.length === 0 ? remote : [...new Set([...remote, ...local])];
    } catch {
      this.stats.fallbacks++;
      return this.local.members(key);
    }
  }
}
