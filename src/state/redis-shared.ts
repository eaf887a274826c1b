/**
 * Shared values as Redis keys with a TTL, mirrored in a local cache and announced on pub/sub. A cached value is
 * trusted for FRESH_MS at most, so a missed announcement (a reconnect) is corrected within a second. While Redis
 * is unavailable, reads answer from the cache and writes stay local until it is back.
 */
import type { RedisLink } from './redis-link.js';
import { arrayReply, numberAt, SHARED_GET, SHARED_SET } from './redis-scripts.js';
import type { SharedListener, SharedValues, StoreStats } from './types.js';
import type { Listeners } from './util.js';

const FRESH_MS = 1000;

interface Cached {
  value: string | undefined;
  expiresAt: number;
  fetchedAt: number;
  /** Written here while Redis was unavailable: to be sent when it is back. */
  dirty: boolean;
}

export interface SharedMessage {
  t: 'shared';
  o: string;
  k: string;
  v?: string;
  ttl?: number;
}

export class RedisShared implements SharedValues {
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly link: RedisLink,
    private readonly stats: StoreStats,
    private readonly listeners: Listeners<Parameters<SharedListener>>,
    private readonly prefix: string,
    private readonly origin: string,
  ) {}

  /** Sets, or deletes when `value` is undefined. */
  async set(key: string, value: string | undefined, ttlMs: number): Promise<void> {
    const entry: Cached = { value, expiresAt: Date.now() + ttlMs, fetchedAt: Date.now(), dirty: true };
    this.cache.set(key, entry);
    this.listeners.emit(key, value);
    await this.send(key, entry);
  }

  delete(key: string): Promise<void> {
    return this.set(key, undefined, 0);
  }

  async get(key: string): Promise<string | undefined> {
    const cached = this.cache.get(key);
    if (cached !== undefined && (cached.dirty || Date.now() - cached.fetchedAt < FRESH_MS)) return this.valid(key);
    try {
      const replied = arrayReply(await this.link.script(SHARED_GET, [this.redisKey(key)], []));
      const stored = replied[0];
      const value = typeof stored === 'string' ? stored : null;
      const pttl = numberAt(replied, 1);
      const now = Date.now();
      // PTTL is -2 for a missing key; a value never expires only if set by hand (-1).
      const expiresAt = value === null ? now + FRESH_MS : pttl < 0 ? Infinity : now + pttl;
      this.cache.set(key, { value: value ?? undefined, expiresAt, fetchedAt: now, dirty: false });
    } catch {
      this.stats.fallbacks++;
    }
    return this.valid(key);
  }

  onChange(listener: SharedListener): () => void {
    return this.listeners.add(listener);
  }

  onMessage(m: SharedMessage): void {
    if (m.o === this.origin) return; // applied and announced locally already
    const now = Date.now();
    this.cache.set(m.k, { value: m.v, expiresAt: m.v === undefined ? now + FRESH_MS : now + (m.ttl ?? 0), fetchedAt: now, dirty: false });
    this.listeners.emit(m.k, m.v);
  }

  /** Redis is back: send what was written meanwhile, re-read everything else. */
  onUp(): void {
    for (const [key, entry] of this.cache) {
      if (entry.dirty) void this.send(key, entry);
      else entry.fetchedAt = 0;
    }
  }

  private async send(key: string, entry: Cached): Promise<void> {
    const ttl = entry.value === undefined ? 0 : Math.round(entry.expiresAt - Date.now());
    if (entry.value !== undefined && ttl <= 0) {
      entry.dirty = false; // expired before it could be sent
      return;
    }
    const message: SharedMessage = { t: 'shared', o: this.origin, k: key, ttl };
    if (entry.value !== undefined) message.v = entry.value;
    try {
      await this.link.script(SHARED_SET, [this.redisKey(key)], [entry.value ?? '', ttl, this.link.channel, JSON.stringify(message)]);
      entry.dirty = false;
    } catch {
      this.stats.fallbacks++; // stays dirty: sent by onUp
    }
  }

  private valid(key: string): string | undefined {
    const entry = this.cache.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > Date.now()) return entry.value;
    if (!entry.dirty) this.cache.delete(key);
    return undefined;
  }

  private redisKey(key: string): string {
    return `${this.prefix}shared:${key}`;
  }
}
