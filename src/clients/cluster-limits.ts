/** A client's limits across replicas (docs/limits-and-edges.md#client-limits-across-replicas). */
import type { AbortLike } from '../abort.js';
import type { StoreHealth, StorePorts } from '../state/types.js';
import type { Admission, Granted, LimitName, LimitSettings } from './client-limiter.js';
import { makePermit } from '../state/semaphores.js';

interface ClusterLimitDeps {
  store: Pick<StorePorts, 'permits' | 'tokens'> & Pick<StoreHealth, 'isUp'>;
  /** A batch admitted by this process's limits alone, Redis being unavailable. */
  localOnly(client: string, limit: LimitName): void;
  now(): number;
  sleep(ms: number, signal: AbortLike): Promise<void>;
}

function clusterKey(client: string): string {
  return `client:${client}`;
}

/** After `local` was granted: a grant whose release gives back both, or a refusal that gives `local` back. */
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
  let slot: { release(): void } | undefined;
  const refuse = (limit: LimitName): Admission => {
    slot?.release();
    local.release();
    return { ok: false, limit, waitedMs: local.waitedMs + (deps.now() - start), cancelled: signal.aborted };
  };
  if (settings.maxInFlight !== undefined) {
    if (!store.isUp()) deps.localOnly(client, 'batches_in_flight');
    slot = await store.permits.acquire(clusterKey(client), settings.maxInFlight, { timeoutMs: Math.max(0, deadline - deps.now()), signal });
    if (slot === undefined) return refuse('batches_in_flight');
  }
  if (settings.perMinute !== undefined) {
    for (;;) {
      const take = await store.tokens.take(clusterKey(client), settings.perMinute, candidates);
      if (take === undefined) {
        deps.localOnly(client, 'candidates_per_minute');
        break;
      }
      if (take.ok) break;
      if (signal.aborted || deps.now() + take.waitMs > deadline) return refuse('candidates_per_minute');
      // Other replicas may take the tokens first.
      await deps.sleep(take.waitMs, signal);
      if (signal.aborted) return refuse('candidates_per_minute');
    }
  }
  const { release } = makePermit(() => {
    slot?.release();
    local.release();
  });
  return { ok: true, waitedMs: local.waitedMs + (deps.now() - start), waitedFor: local.waitedFor, release };
}
