/** Executing a batch plan (docs/protocol-fidelity.md#the-path-of-a-batch): the entry points callers see. */
import type { AttemptFailure } from '../errors.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { BatchPlan } from '../routing/plan.js';
import type { BatchContext, BatchResult, DispatchDeps } from './batch-types.js';
import { batchObserver, type MetricsBatchObserver } from './batch-observer.js';
import { itemsOf } from './batch-item.js';
import { BatchRun } from './batch-run.js';
import { BatchSlots } from './batch-slots.js';

export type { BatchResult } from './batch-types.js';

export function runBatch(
  deps: DispatchDeps,
  request: IndexedAgentRequest,
  plan: BatchPlan,
  ctx: BatchContext,
): Promise<BatchResult> {
  return new BatchRun(deps, batchObserver(deps.metrics, deps.agent, ctx.span), request, plan, ctx).run();
}

/**
 * The plan's every candidate as an error candidate with `failure`, no backend asked (a client over its limits),
 * each input's memory tagged as the plan routes it, so a trajectory keeps its stickiness.
 */
export function failBatch(
  memoryKey: string,
  request: IndexedAgentRequest,
  plan: BatchPlan,
  failure: AttemptFailure,
  observer: MetricsBatchObserver,
): BatchResult {
  const slots = new BatchSlots(request, memoryKey, observer);
  slots.fail(itemsOf(plan, request), failure);
  return { outputs: slots.outputs(), workMs: 0, backends: {}, errorCodes: slots.errorCodes, legs: slots.legs };
}
