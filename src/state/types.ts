/**
 * The shared-state store: one port per concern (below), an in-memory implementation of them all (default, no
 * dependency) and a Redis implementation for several gateway replicas behind a load balancer (config `state.redis`).
 *
 * Every method completes within its own bounds whatever Redis does: while Redis is unreachable or slow the
 * Redis store answers from per-process state (see redis-store.ts), so a request never waits on Redis past its
 * deadline.
 */
import type { AbortLike } from '../abort.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { GatewayConfig } from '../config/schema.js';

/** A claim's answer (claims.ts). */
export interface ClaimResult {
  /** True for the caller whose value was stored. */
  first: boolean;
  /** The stored value: the caller's when first, else the first caller's. */
  value: string;
}

export type StateConfig = GatewayConfig['state'];

/** The part of a pino logger the store uses; a plain interface so tests and callers need not build pino. */
export interface StateLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The answer of a token-bucket take (TokenBuckets.takeTokens). */
export type TokenTake = { ok: true } | { ok: false; waitMs: number };

/** One unit of a per-key concurrency limit. */
export interface Permit {
  /** Gives the permit back. Idempotent; also happens by itself when the acquire signal aborts. */
  release(): void;
}

export interface AcquireOptions {
  /**
   * The request's signal. Aborted while queued: the wait ends with `undefined`. Aborted while held: the permit
   * is released, so a cancelled request can never keep a slot.
   */
  signal?: AbortLike;
  /** Longest time in the queue (queue_timeout_s); `Infinity` waits until the signal aborts. 0 = no waiting. */
  timeoutMs: number;
}

/** Handed to the one caller that computes a batch; every other identical batch waits for it or replays it. */
export interface ReplayLease {
  /** Stores the response for replay_ttl_s (unless over replay_max_bytes) and wakes the waiters. */
  finish(body: string | AnswerBody): Promise<void>;
  /** The computation failed: forget it; a waiter (here or on another replica) computes instead. */
  abandon(): Promise<void>;
}

export type ReplayBegin =
  /** First to see this (request_id, body): compute, then `lease.finish(body)` or `lease.abandon()` (in `finally`). */
  | { kind: 'compute'; lease: ReplayLease }
  /** Seen before with the same body: answer `body` without touching a backend. */
  | { kind: 'hit'; body: string | AnswerBody }
  /** Same request_id with a different body: compute normally and store nothing. */
  | { kind: 'conflict' }
  /** The signal aborted while an identical batch was still being computed elsewhere. */
  | { kind: 'aborted' };

/** Monotonic counts since the store was created, for metrics. */
export interface StoreStats {
  replayHits: number;
  /** Begins that found the batch in progress and had to wait (a subsequent hit counts in replayHits too). */
  replayWaits: number;
  replayConflicts: number;
  replayStored: number;
  /** Responses over replay_max_bytes, not stored. */
  replayTooLarge: number;
  /** Stored responses dropped early from the per-process cache (replay_cache_mb): memory store, or fallback. */
  replayEvicted: number;
  acquireTimeouts: number;
  acquireAborts: number;
  /** Redis store only: permits whose lease Redis dropped while still held (a long stall or an outage). */
  leasesLost: number;
  /** Redis store only: operations answered from per-process state because Redis was unavailable. */
  fallbacks: number;
}

/**
 * The response cache's entries (docs/cache.md): opaque bytes under a key, each for its TTL. Keys embed the
 * generations of their scopes, so emptying a scope is one increment: entries of an old generation are never
 * read again and leave by TTL (Redis) or LRU (memory). Nothing here throws for the store's sake: a Redis
 * failure is `undefined` / `false`, which the cache treats as a miss (or a store not made).
 */
export interface CacheEntries {
  readonly kind: 'memory' | 'redis';
  /** The current generation of each scope ('*', 'agent:<name>', 'backend:<name>'); undefined while unavailable. */
  generations(scopes: readonly string[]): Promise<string[] | undefined>;
  /** The stored value per key (undefined: none); undefined as a whole while unavailable. */
  get(keys: readonly string[]): Promise<(Buffer | undefined)[] | undefined>;
  /** Stores `value` for ttlMs; false when it was not stored (unavailable, or larger than the memory bound). */
  set(key: string, value: Buffer, ttlMs: number): Promise<boolean>;
  /** Starts a new generation of `scope` everywhere; rejects while unavailable (the caller reports it). */
  bump(scope: string): Promise<void>;
  /** Bytes this process holds (the memory cache; 0 for Redis, where entries live), and entries it evicted. */
  held(): { bytes: number; entries: number; evicted: number };
}

/** What a cache is built with (the top-level `cache` config, in bytes and milliseconds). */
export interface CacheEntriesOptions {
  /** cache.max_mb: the memory cache's bound (LRU). */
  capBytes: number;
}

/*
 * The store's ports: one per concern, each consumer taking only the ones it uses (dispatch the permits, the batch
 * core the replay, the client limits permits and token buckets, the experiments counters, claims, lists and shared
 * values, the cache its entries, ejections the shared values). Both stores implement all of them (`Store`); only
 * src/state/ and the composition root (plugins/gateway.ts, batch/gateway-state.ts) name `Store` itself.
 */

/** Which store it is, whether it is reachable, and what it counted (metrics, the console). */
export interface StoreHealth {
  readonly kind: 'memory' | 'redis';
  /** False while Redis is unreachable or slow; the memory store is always up. */
  isUp(): boolean;
  /** Called on every change of isUp(); returns an unsubscribe function. */
  onUpChange(listener: (up: boolean) => void): () => void;
  stats(): StoreStats;
}

/** Idempotent replay of batches (docs/deployment.md#several-gateway-replicas-redis). */
export interface ReplayStore {
  /**
   * Idempotent replay of a batch: `bodyHash` from hashBody(). Waits (until `signal` aborts) while an identical
   * batch is being computed by any replica; if that one is abandoned or its replica dies, one waiter computes.
   */
  replayBegin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin>;
}

/** Per-key concurrency limits. */
export interface Permits {
  /**
   * A permit of a per-key limit (key = a backend replica), FIFO across all gateway replicas sharing Redis.
   * `undefined` = timed out or aborted. The limit is the caller's current one (max_in_flight).
   */
  acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined>;
}

/** Cluster-wide token buckets (a client's candidates per minute). */
export interface TokenBuckets {
  /**
   * Takes `n` tokens from a cluster-wide token bucket of `capacity` tokens refilled at capacity per minute (a
   * client's max_candidates_per_minute), starting full. A take larger than the bucket waits for a full bucket,
   * then takes it into debt. `{ ok: false, waitMs }`: not enough yet, try again after waitMs; undefined: Redis
   * is unavailable (the caller's local bucket is all that holds). The memory store has no other process to
   * share with: it grants every take (the local limiter is the whole limit).
   */
  takeTokens(key: string, capacity: number, n: number): Promise<TokenTake | undefined>;
}

/** Cluster-wide counters (experiment arms, feedback, outcomes). */
export interface Counters {
  /** Adds `by` (default 1) to a cluster-wide counter; fire-and-forget, batched. */
  incr(key: string, field: string, by?: number): void;
  /** Cluster totals of every field of `key`, including this process's increments not yet sent. */
  readCounters(key: string): Promise<Record<string, number>>;
  /** Sends pending counter increments now (the store also does so on its own within ~200 ms). */
  flush(): Promise<void>;
}

/** Small shared values (ejections, probe results, experiment epochs) that expire, with change announcements. */
export interface SharedValues {
  /** Stores `value` under `key` for ttlMs. */
  setShared(key: string, value: string, ttlMs: number): Promise<void>;
  deleteShared(key: string): Promise<void>;
  /** Current value; at most ~1 s stale between replicas (changes are also pushed via onSharedChange). */
  getShared(key: string): Promise<string | undefined>;
  /**
   * Called when any replica sets or deletes a shared value (once per change, including this process's own);
   * `undefined` = deleted. Expiry by TTL is not announced. Returns an unsubscribe function.
   */
  onSharedChange(listener: (key: string, value: string | undefined) => void): () => void;
}

/** Set-once values and bounded sets with a TTL: the experiment recorder's marks and index (claims.ts). */
export interface Claims {
  /**
   * Set-once: the first caller, on any replica sharing the store, stores `value` under `key` until it expires
   * after `ttlMs`; every caller learns the stored value and whether it was the first (idempotency marks, slots,
   * the one writer per interval of the experiment history). Redis unavailable: answered locally.
   */
  claim(key: string, value: string, ttlMs: number): Promise<ClaimResult>;
  /** The value a claim holds, if any. */
  readClaim(key: string): Promise<string | undefined>;
  /**
   * Adds `member` to a set of at most `maxMembers` members and renews its TTL. False: the set was full and
   * `member` was not in it, so it was left out (callers count that, docs/experiments.md#bounds-and-sizing).
   */
  addToSet(key: string, member: string, ttlMs: number, maxMembers: number): Promise<boolean>;
  /** The members of a set, in no particular order. */
  readSet(key: string): Promise<string[]>;
}

/** Lists that keep their last entries (the experiment history, experiments/report/history.ts). */
export interface CappedLists {
  /**
   * Appends `value` to the list `key`, keeping only its last `max` entries (the oldest dropped), the whole list
   * forgotten `ttlMs` after its last append. Redis unavailable: the value is dropped (a gap in the history,
   * counted in `fallbacks`).
   */
  pushCapped(key: string, value: string, max: number, ttlMs: number): Promise<void>;
  /** The list `key`, oldest first; empty when there is none, or while Redis is unavailable (counted in `fallbacks`). */
  readList(key: string): Promise<string[]>;
}

/** Where the response cache keeps its entries. */
export interface CacheStore {
  /** The response cache's entries in this store: this process's memory, or Redis shared by every replica. */
  cacheEntries(opts: CacheEntriesOptions): CacheEntries;
}

/** Every port, as the two stores implement them; held by the composition root. */
export interface Store extends StoreHealth, ReplayStore, Permits, TokenBuckets, Counters, SharedValues, Claims, CappedLists, CacheStore {
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
