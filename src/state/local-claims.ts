/**
 * Set-once values and small sets with a TTL, in this process (the memory store, and the Redis store's fallback
 * while Redis is unavailable). The experiment recorder keeps its idempotency marks and its outcome index here
 * (docs/experiments.md#what-the-gateway-stores). Bounded: past `maxEntries` (state.index_max_entries) the
 * oldest entries go first, so a flood of trajectories costs memory only up to the bound.
 */

export interface ClaimResult {
  /** True for the caller whose value was stored. */
  first: boolean;
  /** The stored value: the caller's when first, else the first caller's. */
  value: string;
}

interface Entry<T> {
  value: T;
  expiresAt: number;
}

export class LocalClaims {
  private readonly claims = new Map<string, Entry<string>>();
  private readonly sets = new Map<string, Entry<Set<string>>>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  claim(key: string, value: string, ttlMs: number): ClaimResult {
    const hit = this.live(this.claims, key);
    if (hit !== undefined) return { first: false, value: hit.value };
    this.put(this.claims, key, { value, expiresAt: this.now() + ttlMs });
    return { first: true, value };
  }

  read(key: string): string | undefined {
    return this.live(this.claims, key)?.value;
  }

  /** Adds a member (at most `maxMembers` per set) and renews the set's TTL. */
  add(key: string, member: string, ttlMs: number, maxMembers: number): void {
    const hit = this.live(this.sets, key);
    const expiresAt = this.now() + ttlMs;
    if (hit === undefined) {
      this.put(this.sets, key, { value: new Set([member]), expiresAt });
      return;
    }
    if (hit.value.size < maxMembers) hit.value.add(member);
    hit.expiresAt = expiresAt;
  }

  members(key: string): string[] {
    return [...(this.live(this.sets, key)?.value ?? [])];
  }

  /** Forgets everything (the store closing). */
  clear(): void {
    this.claims.clear();
    this.sets.clear();
  }

  private live<T>(map: Map<string, Entry<T>>, key: string): Entry<T> | undefined {
    const e = map.get(key);
    if (e === undefined) return undefined;
    if (e.expiresAt > this.now()) return e;
    map.delete(key);
    return undefined;
  }

  private put<T>(map: Map<string, Entry<T>>, key: string, e: Entry<T>): void {
    map.set(key, e);
    // Insertion order is age order: the oldest go first, a few at a time so no single call does much.
    while (map.size > this.maxEntries) {
      const oldest = map.keys().next();
      if (oldest.done === true) break;
      map.delete(oldest.value);
    }
  }
}
