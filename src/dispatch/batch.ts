/**
 * Executing a batch plan (README "What happens to a batch"): the entry point and the types callers see. The
 * batch itself is a BatchRun (batch-run.ts), each sub-request an Attempt (attempt.ts), where failed items go a
 * pure decision (failover.ts), and what happens is reported to one BatchObserver (batch-observer.ts).
 */
import type { AbortLike } from '../abort.js';
import type { FastifyBaseLogger } from 'fastify';
import type { GatewayMetrics } from '../metrics.js';
import type { AgentOutput, AgentRequest } from '../protocol/types.js';
import type { BatchPlan } from '../routing/plan.js';
import type { Upstreams } from '../upstream/upstreams.js';
import type { RetryBudget } from './retry-budget.js';
import type { Store } from '../state/index.js';
import { MetricsBatchObserver, type BatchObserver } from './batch-observer.js';
import { BatchRun } from './batch-run.js';

export interface DispatchDeps {
  upstreams: Upstreams;
  budget: RetryBudget;
  /** Concurrency permits for backends with max_in_flight (cluster-wide with Redis). */
  store: Store;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
  memoryKey: string;
}

export interface BatchContext {
  /** Epoch ms by which every attempt and fallback must be over (request_timeout_s). */
  deadline: number;
  /** Headers passed to every backend (x-request-id, traceparent). */
  headers: Record<string, string>;
  /** Aborted when the client goes away or the deadline passes. */
  signal?: AbortLike;
  /** True once the client closed its connection (the signal then says nothing of the backend). */
  clientGone?: () => boolean;
  /** The client's request body as received, forwarded as is when a sub-request is the whole request. */
  requestBody?: Buffer;
}

export interface BatchResult {
  outputs: AgentOutput[];
  /** True when some value holds number markers: serialize with stringifyExact. */
  marked: boolean;
  /** Milliseconds of the gateway's own work inside dispatch (bodies built, answers parsed and checked). */
  workMs: number;
  backends: Record<string, number>;
  errorCodes: Record<string, number>;
  /** Per leg that got an answer (or a final failure): who served it and how long its sub-request took. */
  legs: LegOutcome[];
}

export interface LegOutcome {
  input: number;
  backend: string;
  route: string;
  arm?: string;
  /** Wall time of the sub-request that answered this leg; undefined when no request was made. */
  ms?: number;
}

/**
 * Run `plan` for `request` to completion: every candidate slot is filled, by a backend or with an error
 * candidate. `observer` defaults to the gateway's Prometheus series.
 */
export function runBatch(
  deps: DispatchDeps,
  request: AgentRequest,
  plan: BatchPlan,
  ctx: BatchContext,
  requestMarked: boolean,
  observer: BatchObserver = new MetricsBatchObserver(deps.metrics),
): Promise<BatchResult> {
  return new BatchRun(deps, observer, request, plan, ctx, requestMarked).run();
}
