/** When a batch's answer is streamed, and what its response must do (docs/protocol-fidelity.md#streamed-answers). */
import type { AnswerSink } from '../dispatch/batch-types.js';
import type { BatchPlan, CompiledRoutes } from '../routing/plan.js';

/** The front implements it (http/answer-write.ts). */
export interface ResponseStream extends AnswerSink {
  /** Known before dispatch, sent with the first byte. */
  describe(requestId: string | undefined, cacheHits: number | undefined): void;
  /** The answer is complete; its overhead follows as a trailer. */
  end(overheadMs: number): void;
}

/**
 * Every input on a plain backend route with one leg and no shadow: experiment accounting reads every candidate
 * after the batch, shadows compare against the whole answer.
 */
export function streamable(compiled: CompiledRoutes, plan: BatchPlan): boolean {
  return plan.inputs.every(
    (p) => p.shadows.length === 0 && p.legs.length === 1 && compiled.routes.find((r) => r.name === p.route)?.kind === 'backend',
  );
}
