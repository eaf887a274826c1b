/**
 * The shared-state store: one interface, an in-memory implementation (default, no dependency) and a Redis
 * implementation for several gateway replicas behind a load balancer (config `state.redis`).
 *
 * Every method completes within its own bounds whatever Redis does: while Redis is unreachable or slow the
 * Redis store answers from per-process state (see redis-store.ts), so a request never waits on Redis past its
 * deadline.
 */
import type { AbortLike } from '../abort.js';
import type { AnswerBody } from '../protocol/answer-body.js';
import type { GatewayConfig } from '../config/schema.js';

export type StateConfig = GatewayConfig['state'];

/** The part of a pino logger the store uses; a plain interface so tests and callers need not build pino. */
export interface StateLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The answer of a token-bucket take (Store.takeTokens). */
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

export interface Store {
  readonly kind: 'memory' | 'redis';
  /** False while Redis is unreachable or slow; the memory store is always up. */
  isUp(): boolean;
  /** Called on every change of isUp(); returns an unsubscribe function. */
  onUpChange(listener: (up: boolean) => void): () => void;

  /**
   * Idempotent replay of a batch: `bodyHash` from hashBody(). Waits (until `signal` aborts) while an identical
   * batch is being computed by any replica; if that one is abandoned or its replica dies, one waiter computes.
   */
  replayBegin(requestId: string, bodyHash: string, signal?: AbortLike): Promise<ReplayBegin>;

  /**
   * A permit of a per-key limit (key = a backend replica), FIFO across all gateway replicas sharing Redis.
   * `undefined` = timed out or aborted. The limit is the caller's current one (max_in_flight).
   */
  acquire(key: string, limit: number, opts: AcquireOptions): Promise<Permit | undefined>;

  /**
   * Takes `n` tokens from a cluster-wide token bucket of `capacity` tokens refilled at capacity per minute (a
   * client's max_candidates_per_minute), starting full. A take larger than the bucket waits for a full bucket,
   * then takes it into debt. `{ ok: false, waitMs }`: not enough yet, try again after waitMs; undefined: Redis
   * is unavailable (the caller's local bucket is all that holds). The memory store has no other process to
   * share with: it grants every take (the local limiter is the whole limit).
   */
  takeTokens(key: string, capacity: number, n: number): Promise<TokenTake | undefined>;

  /** Adds `by` (default 1) to a cluster-wide counter; fire-and-forget, batched. */
  incr(key: string, field: string, by?: number): void;
  /** Cluster totals of every field of `key`, including this process's increments not yet sent. */
  readCounters(key: string): Promise<Record<string, number>>;
  /** Sends pending counter increments now (the store also does so on its own within ~200 ms). */
  flush(): Promise<void>;

  /** Small shared values (ejections, probe results) that expire after ttlMs. */
  setShared(key: string, value: string, ttlMs: number): Promise<void>;
  deleteShared(key: string): Promise<void>;
  /** Current value; at most ~1 s stale between replicas (changes are also pushed via onSharedChange). */
  getShared(key: string): Promise<string | undefined>;
  /**
   * Called when any replica sets or deletes a shared value (once per change, including this process's own);
   * `undefined` = deleted. Expiry by TTL is not announced. Returns an unsubscribe function.
   */
  onSharedChange(listener: (key: string, value: string | undefined) => void): () => void;

  stats(): StoreStats;
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
