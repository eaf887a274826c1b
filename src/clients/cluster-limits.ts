/**
 * A client's limits across gateway replicas (docs/limits-and-edges.md#client-limits-across-replicas): with
 * `state.redis`, a batch the client's limiter in this process admitted (client-limiter.ts, which keeps the FIFO
 * order among this replica's batches) also takes a cluster-wide slot, the Redis semaphore the backends'
 * max_in_flight uses (state/redis-semaphore.ts), and its candidates from a token bucket kept in Redis (a Lua
 * script, state/redis-scripts.ts TOKEN_TAKE). Both wait within what is left of the client's max_wait_s.
 *
 * While Redis is unavailable the semaphore falls back to a per-process one and the bucket is not asked: each
 * replica's own limits hold, and every batch so admitted is counted (`localOnly`) for the metrics warning.
 */
import type { AbortLike } from '../abort.js';
import type { Permits, StoreHealth, TokenBuckets } from '../state/types.js';
import type { Admission, Granted, LimitName, LimitSettings } from './client-limiter.js';

export interface ClusterLimitDeps {
  /** The cluster-wide slots and buckets, and whether Redis answers now. */
  store: Permits & TokenBuckets & Pick<StoreHealth, 'isUp'>;
  /** A batch admitted by this process's limits alone, Redis being unavailable. */
  localOnly(client: string, limit: LimitName): void;
  /** Milliseconds; Date.now in the gateway. */
  now(): number;
  /** Resolves after `ms`, or early when `signal` aborts. */
  sleep(ms: number, signal: AbortLike): Promise<void>;
}

/** The key of a client's shared state: its slot semaphore and its bucket. */
function clusterKey(client: string): string {
  return `client:${client}`;
}

/**
 * The cluster-wide part of a client's admission, after `local` was granted: resolves with a grant whose
 * release gives back both, or with the refusal (the local slot then given back). `waitMs`: what is left of
 * the batch's wait (max_wait_s, capped by its deadline).
 */
export async function admitCluster(
  deps: ClusterLimitDeps,
  client: string,
  settings: LimitSettings,
  candidates: number,
  waitMs: number,
  signal: AbortLike,
  local: Granted,
): Promise<Admission> {
  const { store } = deps;
  const start = deps.now();
  const deadline = start + Math.max(0, waitMs);
  const refuse = (limit: LimitName): Admission => {
    local.release();
    return { ok: false, limit, waitedMs: local.waitedMs + (deps.now() - start), cancelled: signal.aborted };
  };
  let slot: { release(): void } | undefined;
  if (settings.maxInFlight !== undefined) {
    if (!store.isUp()) deps.localOnly(client, 'batches_in_flight');
    slot = await store.acquire(clusterKey(client), settings.maxInFlight, { timeoutMs: Math.max(0, deadline - deps.now()), signal });
    if (slot === undefined) return refuse('batches_in_flight');
  }
  if (settings.perMinute !== undefined) {
    for (;;) {
      const take = await store.takeTokens(clusterKey(client), settings.perMinute, candidates);
      if (take === undefined) {
        deps.localOnly(client, 'candidates_per_minute');
        break;
      }
      if (take.ok) break;
      if (signal.aborted || deps.now() + take.waitMs > deadline) {
        slot?.release();
        return refuse('candidates_per_minute');
      }
      // Retried when the bucket will hold enough, as it said; other replicas may take them first.
      await deps.sleep(take.waitMs, signal);
      if (signal.aborted) {
        slot?.release();
        return refuse('candidates_per_minute');
      }
    }
  }
  const waitedMs = local.waitedMs + (deps.now() - start);
  let released = false;
  return {
    ok: true,
    waitedMs,
    waitedFor: local.waitedFor,
    release: () => {
      if (released) return;
      released = true;
      slot?.release();
      local.release();
    },
  };
}
