/**
 * A batch waits for its client's limits (docs/operations.md#client-keys) for at most `max_wait_s` and its deadline;
 * still over, every candidate is a `gateway_overloaded` error candidate: never an HTTP error for load.
 */
import type { AbortLike } from '../abort.js';
import type { Admission, Refused } from '../clients/client-limiter.js';
import { admitCluster } from '../clients/cluster-limits.js';
import { failBatch } from '../dispatch/batch.js';
import { MetricsBatchObserver } from '../dispatch/batch-observer.js';
import type { AttemptFailure } from '../errors.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import { candidateCount } from '../protocol/request-limits.js';
import { planBatch, type CompiledRoutes } from '../routing/plan.js';
import type { GatewayRuntime } from '../runtime.js';
import { abortableDelay } from '../state/util.js';
import type { GatewayState } from './gateway-state.js';

const LIMIT_KEY = { batches_in_flight: 'max_batches_in_flight', candidates_per_minute: 'max_candidates_per_minute' } as const;

/** Resolves after `ms`, or at once when `signal` aborts. */
async function sleep(ms: number, signal: AbortLike): Promise<void> {
  const wait = abortableDelay(ms, signal);
  await wait.promise;
  wait.cancel();
}

/** With state.redis the limits hold across replicas: this process's limiter first, then the shared ones. */
export async function admitClient(
  gw: GatewayState,
  client: string,
  request: IndexedAgentRequest,
  deadline: number,
  signal: AbortLike,
): Promise<Admission> {
  const candidates = candidateCount(request.inputs);
  const t0 = Date.now();
  const local = await gw.clients.acquire(client, candidates, Math.max(0, deadline - t0), signal);
  const c = gw.current.config.clients?.[client];
  if (!local.ok || gw.store.kind !== 'redis' || c === undefined) return local;
  const waitMs = Math.min(c.max_wait_s * 1000, deadline - t0) - (Date.now() - t0);
  const deps = {
    store: gw.store,
    localOnly: (name: string, limit: string) => gw.metrics.clientLimitsLocalOnly.inc({ client: name, limit }),
    now: () => Date.now(),
    sleep,
  };
  const settings = { maxInFlight: c.max_batches_in_flight, perMinute: c.max_candidates_per_minute };
  const admitted = await admitCluster(deps, client, settings, candidates, waitMs, signal, local);
  if (!admitted.ok && !admitted.cancelled) gw.metrics.clientLimitOverloaded.inc({ client, limit: admitted.limit });
  return admitted;
}

function overloadMessage(runtime: GatewayRuntime, client: string, refused: Refused): string {
  const key = LIMIT_KEY[refused.limit];
  const value = runtime.config.clients?.[client]?.[key];
  const limit = `clients.${client}.${key}${value === undefined ? '' : ` (${value})`}`;
  const waited = `${(refused.waitedMs / 1000).toFixed(1)} s`;
  return refused.cancelled
    ? `client ${client}: the batch was cancelled (client gone or request_timeout_s over) after waiting ${waited} for ${limit}`
    : `client ${client} is over ${limit}: waited ${waited} (clients.${client}.max_wait_s, capped by the batch deadline)`;
}

/** Counted in the candidate series like any answer. */
export function overloadedOutputs(
  runtime: GatewayRuntime,
  routes: CompiledRoutes,
  gw: GatewayState,
  request: IndexedAgentRequest,
  headers: Record<string, string | string[] | undefined>,
  client: string,
  refused: Refused,
): ReturnType<typeof failBatch> {
  const plan = planBatch(request, routes, runtime.upstreams, { headers });
  const failure: AttemptFailure = { code: 'gateway_overloaded', message: overloadMessage(runtime, client, refused) };
  return failBatch(routes.memoryKey, request, plan, failure, new MetricsBatchObserver(gw.metrics, routes.agent));
}
