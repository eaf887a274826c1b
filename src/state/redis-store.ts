/**
 * The Redis store: state shared by every replica with the same Redis and key_prefix, each part with a
 * per-process fallback while Redis is unavailable. Keys under key_prefix: `sem:{key}:*`, `bucket:{key}`,
 * `replay:{request_id}`, `counters:{key}`, `shared:<key>`, `claim:<key>`, `set:<key>`, `list:<key>`,
 * `cache:e:<digest>`, `cache:{gen}:<scope>`, and the pub/sub channel `events` (docs/experiments.md#bounds-and-sizing).
 */
import { LocalClaims, RedisClaims } from './claims.js';
import { RedisCache } from './cache-entries.js';
import { RedisCounters } from './redis-counters.js';
import { RedisLink } from './redis-link.js';
import { LocalReplay, RedisReplay, replayLimits } from './replay.js';
import { LocalSemaphores, RedisSemaphores } from './semaphores.js';
import { RedisShared, type SharedMessage } from './redis-shared.js';
import { arrayReply, numberAt, TOKEN_TAKE } from './redis-scripts.js';
import { isJsonObject, parseJsonOrUndefined } from '../protocol/schemas.js';
import type { CacheEntries, CappedLists, StateConfig, StateLog, Store, TokenBuckets } from './types.js';
import { StoreBase } from './store-base.js';
import { newId } from './util.js';
import { GatewayError } from '../errors.js';

type Message = { t: 'sem'; k: string } | { t: 'replay'; k: string } | SharedMessage;

/** Undefined for someone else's message on the channel. */
function parseMessage(raw: string): Message | undefined {
  const m = parseJsonOrUndefined(raw);
  if (!isJsonObject(m) || typeof m.k !== 'string') return undefined;
  if (m.t === 'sem' || m.t === 'replay') return { t: m.t, k: m.k };
  if (m.t === 'shared' && typeof m.o === 'string' && (m.v === undefined || typeof m.v === 'string') && (m.ttl === undefined || typeof m.ttl === 'number')) {
    return { t: m.t, o: m.o, k: m.k, v: m.v, ttl: m.ttl };
  }
  return undefined;
}

export class RedisStore extends StoreBase implements Store {
  readonly kind = 'redis' as const;
  private readonly link: RedisLink;
  readonly permits: RedisSemaphores;
  readonly replay: RedisReplay;
  private readonly localReplay: LocalReplay;
  readonly counters: RedisCounters;
  readonly shared: RedisShared;
  readonly claims: RedisClaims;
  private readonly localClaims: LocalClaims;
  private readonly prefix: string;
  private closing: Promise<void> | undefined;

  readonly tokens: TokenBuckets = {
    take: async (key, capacity, n) => {
      if (!this.link.isUp()) return undefined;
      try {
        const replied = arrayReply(await this.link.script(TOKEN_TAKE, [`${this.prefix}bucket:{${key}}`], [capacity, n]));
        return numberAt(replied, 0) === 1 ? { ok: true } : { ok: false, waitMs: numberAt(replied, 1) };
      } catch {
        this.counts.fallbacks++;
        return undefined;
      }
    },
  };

  readonly lists: CappedLists = {
    push: async (key, value, max, ttlMs) => {
      const k = `${this.prefix}list:${key}`;
      try {
        // One MULTI on one key: atomic, and a single slot on Redis Cluster.
        await this.link.run((c) => c.multi().rpush(k, value).ltrim(k, -Math.max(1, max), -1).pexpire(k, Math.ceil(ttlMs)).exec());
      } catch {
        this.counts.fallbacks++;
      }
    },
    read: async (key) => {
      try {
        return await this.link.run((c) => c.lrange(`${this.prefix}list:${key}`, 0, -1));
      } catch {
        this.counts.fallbacks++;
        return [];
      }
    },
  };

  constructor(config: StateConfig, log: StateLog) {
    super(log);
    const redis = config.redis;
    if (redis === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'RedisStore needs state.redis');
    const prefix = redis.key_prefix;
    this.prefix = prefix;
    const origin = newId(); // tells this instance's own announcements apart
    // Whole milliseconds: PEXPIRE and SET PX take integers only.
    const leaseMs = Math.ceil(config.lease_s * 1000);
    this.link = new RedisLink(redis, `${prefix}events`, log, (raw) => this.onMessage(raw));
    this.permits = new RedisSemaphores(this.link, new LocalSemaphores(this.counts), this.counts, {
      prefix,
      leaseMs,
    });
    const replay = replayLimits(config);
    this.localReplay = new LocalReplay(replay, this.counts);
    this.replay = new RedisReplay(this.link, this.localReplay, this.counts, { prefix, ...replay, leaseMs });
    this.counters = new RedisCounters(this.link, this.counts, prefix, origin, Math.ceil(config.counters_ttl_s * 1000));
    this.localClaims = new LocalClaims(config.index_max_entries);
    this.claims = new RedisClaims(this.link, this.localClaims, this.counts, prefix);
    this.shared = new RedisShared(this.link, this.counts, this.sharedListeners, prefix, origin);
    this.link.onUpChange((up) => {
      if (!up) return;
      this.permits.onUp();
      this.replay.onUp();
      this.shared.onUp();
      void this.counters.flush();
    });
  }

  isUp(): boolean {
    return this.link.isUp();
  }

  onUpChange(listener: (up: boolean) => void): () => void {
    return this.link.onUpChange(listener);
  }

  /** max_mb bounds the memory cache only. */
  cacheEntries(): CacheEntries {
    return new RedisCache(this.link, this.prefix);
  }

  async close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await Promise.allSettled([this.permits.close(), this.replay.close(), this.counters.close()]);
    this.localReplay.clear();
    this.localClaims.clear();
    await this.link.close();
  }

  private onMessage(raw: string): void {
    const m = parseMessage(raw);
    if (m === undefined) return;
    if (m.t === 'sem') this.permits.wake(m.k);
    else if (m.t === 'replay') this.replay.wake(m.k);
    else this.shared.onMessage(m);
  }
}
