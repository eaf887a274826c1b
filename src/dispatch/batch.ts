/**
 * Executing a batch plan (README "What happens to a batch"): the entry point and the types callers see. The
 * batch itself is a BatchRun (batch-run.ts), each sub-request an Attempt (attempt.ts), where failed items go a
 * pure decision (failover.ts), and what happens is reported to one BatchObserver (batch-observer.ts).
 */
import type { AgentRequest } from '../protocol/types.js';
import type { BatchPlan } from '../routing/plan.js';
import type { BatchContext, BatchResult, DispatchDeps } from './batch-types.js';
import { MetricsBatchObserver, type BatchObserver } from './batch-observer.js';
import { BatchRun } from './batch-run.js';

export type { BatchContext, BatchResult, DispatchDeps, LegOutcome } from './batch-types.js';

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
  observer: BatchObserver = new MetricsBatchObserver(deps.metrics, deps.agent),
): Promise<BatchResult> {
  return new BatchRun(deps, observer, request, plan, ctx, requestMarked).run();
}
