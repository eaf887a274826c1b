/**
 * The store's ports, one per concern; each store holds a part implementing each (`StorePorts`). Every method completes
 * within its own bounds whatever Redis does: the Redis store answers from per-process state while Redis is down or slow.
 */
import type { AbortLike } from '../abort.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { GatewayConfig } from '../config/schema.js';

export interface ClaimResult {
  first: boolean;
  /** The stored value: the caller's when first, else the first caller's. */
  value: string;
}

export type StateConfig = GatewayConfig['state'];

/** The part of a pino logger the store uses, so tests need not build pino. */
export interface StateLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export type TokenTake = { ok: true } | { ok: false; waitMs: number };

export interface Permit {
  /** Idempotent; also happens by itself when the acquire signal aborts. */
  release(): void;
}

export interface AcquireOptions {
  /** Aborted while queued: the wait ends with `undefined`; aborted while held: the permit is released. */
  signal?: AbortLike;
  /** queue_timeout_s; `Infinity` waits until the signal aborts, 0 takes only a free permit. */
  timeoutMs: number;
}

/** Handed to the one caller that computes a batch; every other identical batch waits for it or replays it. */
export interface ReplayLease {
  /** Stores the response for replay_ttl_s (unless over replay_max_bytes) and wakes the waiters. */
  finish(body: string | AnswerBody): Promise<void>;
  /** The computation failed: a waiter (here or on another replica) computes instead. */
  abandon(): Promise<void>;
}

export type ReplayBegin =
  /** Compute, then `lease.finish(body)` or `lease.abandon()` (in `finally`). */
  | { kind: 'compute'; lease: ReplayLease }
  | { kind: 'hit'; body: string | AnswerBody }
  /** Same request_id with a different body: compute normally and store nothing. */
  | { kind: 'conflict' }
  | { kind: 'aborted' };

export interface StoreStats {
  replayHits: number;
  /** Begins that found the batch in progress (a later hit counts in replayHits too). */
  replayWaits: number;
  replayConflicts: number;
  replayStored: number;
  replayTooLarge: number;
  replayEvicted: number;
  acquireTimeouts: number;
  acquireAborts: number;
  /** Redis only: permits whose lease Redis dropped while still held (a long stall or an outage). */
  leasesLost: number;
  fallbacks: number;
}

export interface HeldEntries {
  bytes: number;
  entries: number;
  evicted: number;
}

/**
 * The response cache's entries (docs/cache.md). Keys embed their scopes' generations, so emptying a scope is one
 * increment; old entries leave by TTL or LRU. A Redis failure is `undefined` / `false` (a miss), never a throw.
 */
export interface CacheEntries {
  readonly kind: 'memory' | 'redis';
  /** Scopes: '*', 'agent:<name>', 'backend:<name>'. */
  generations(scopes: readonly string[]): Promise<string[] | undefined>;
  get(keys: readonly string[]): Promise<(Buffer | undefined)[] | undefined>;
  /** False when not stored (unavailable, or larger than the memory bound). */
  set(key: string, value: Buffer, ttlMs: number): Promise<boolean>;
  /** Rejects while unavailable (the caller reports it). */
  bump(scope: string): Promise<void>;
  held(): HeldEntries;
}

export interface CacheEntriesOptions {
  /** cache.max_mb in bytes: the memory cache's LRU bound. */
  capBytes: number;
}

export interface StoreHealth {
  readonly kind: 'memory' | 'redis';
  /** False while Redis is unreachable or slow; the memory store is always up. */
  isUp(): boolean;
  onUpChange(listener: (up: boolean) => void): () => void;
  stats(): StoreStats;
}

export interface ReplayStore {
  /** Waits while any replica computes an identical batch; if that is abandoned or its replica dies, one computes. */
  begin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin>;
}

export interface Permits {
  /** FIFO across the replicas sharing Redis; `undefined` = timed out or aborted. */
  acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined>;
}

export interface TokenBuckets {
  /**
   * A bucket of `capacity` refilled at capacity per minute, starting full; a take larger than the bucket waits for a
   * full one, then takes it into debt. Undefined: Redis is unavailable. The memory store grants every take.
   */
  take(key: string, capacity: number, n: number): Promise<TokenTake | undefined>;
}

export interface Counters {
  incr(key: string, field: string, by?: number): void;
  /** Cluster totals, including this process's increments not yet sent. */
  read(key: string): Promise<Record<string, number>>;
  /** Sends pending increments now (otherwise within ~200 ms). */
  flush(): Promise<void>;
}

export type SharedListener = (key: string, value: string | undefined) => void;

/** Small shared values that expire (ejections, probe results, experiment epochs). */
export interface SharedValues {
  set(key: string, value: string, ttlMs: number): Promise<void>;
  delete(key: string): Promise<void>;
  /** At most ~1 s stale between replicas. */
  get(key: string): Promise<string | undefined>;
  /** Every set or delete on any replica, this one's included; expiry is not announced. */
  onChange(listener: SharedListener): () => void;
}

/** Set-once values and bounded sets with a TTL: the experiment recorder's marks and index (claims.ts). */
export interface Claims {
  claim(key: string, value: string, ttlMs: number): Promise<ClaimResult>;
  read(key: string): Promise<string | undefined>;
  /** Removes the claim while it still holds `value`: what was claimed for work that never reached its client. */
  release(key: string, value: string): Promise<void>;
  /** False: the set was full without `member` (callers count it, docs/experiments.md#bounds-and-sizing). */
  addMember(key: string, member: string, ttlMs: number, maxMembers: number): Promise<boolean>;
  members(key: string): Promise<string[]>;
}

/** Lists that keep their last entries (the experiment history). */
export interface CappedLists {
  /** Keeps the last `max` entries; the list is forgotten `ttlMs` after its last append. */
  push(key: string, value: string, max: number, ttlMs: number): Promise<void>;
  /** Empty while Redis is unavailable. */
  read(key: string): Promise<string[]>;
}

export interface CacheStore {
  cacheEntries(opts: CacheEntriesOptions): CacheEntries;
}

/** A consumer names the parts it uses, `Pick<StorePorts, 'claims' | 'counters'>`, never the whole Store (test/state/ports.test.ts). */
export interface StorePorts {
  readonly replay: ReplayStore;
  readonly permits: Permits;
  readonly tokens: TokenBuckets;
  readonly counters: Counters;
  readonly shared: SharedValues;
  readonly claims: Claims;
  readonly lists: CappedLists;
}

export interface Store extends StoreHealth, StorePorts, CacheStore {
  /** Releases this process's permits and abandons its replay leases, sends pending counters, disconnects. */
  close(): Promise<void>;
}

export function emptyStats(): StoreStats {
  return {
    replayHits: 0,
    replayWaits: 0,
    replayConflicts: 0,
    replayStored: 0,
    replayTooLarge: 0,
    replayEvicted: 0,
    acquireTimeouts: 0,
    acquireAborts: 0,
    leasesLost: 0,
    fallbacks: 0,
  };
}
