/**
 * When and how a batch's answer is streamed (docs/protocol-fidelity.md#streamed-answers): only when one
 * sub-request can carry the whole batch and nothing else needs the whole answer, so writing candidates as they
 * arrive changes nothing but when they are written.
 */
import type { AnswerSink } from '../dispatch/batch-types.js';
import type { BatchPlan, CompiledRoutes } from '../routing/plan.js';

/**
 * The client's response written as it is produced: the dispatch's sink (dispatch/batch-types.ts), plus what
 * the batch says around it. The front implements it (http/answer-write.ts) and writes the headers.
 */
export interface ResponseStream extends AnswerSink {
  /** What the head says besides the status, known before dispatch: sent with the first byte. */
  describe(requestId: string | undefined, cacheHits: number | undefined): void;
  /** The answer is complete; its overhead, in milliseconds, follows as a trailer. */
  end(overheadMs: number): void;
}

/**
 * Whether `plan` may be streamed: every input on a plain backend route with one leg and no shadow. Splits and
 * ensembles are left out because experiment accounting reads every candidate after the batch, shadows because
 * they compare against the whole answer.
 */
export function streamable(compiled: CompiledRoutes, plan: BatchPlan): boolean {
  return plan.inputs.every(
    (p) => p.shadows.length === 0 && p.legs.length === 1 && compiled.routes.find((r) => r.name === p.route)?.kind === 'backend',
  );
}
