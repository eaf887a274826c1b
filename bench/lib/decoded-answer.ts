/**
 * The answer reader the byte indexer replaced: a backend's answer decoded (parseExact) and each element judged by
 * agentOutputSchema, its candidates plain objects. The gateway no longer takes a candidate from it; it stays as the
 * oracle of test/protocol/answer-differential.test.ts and as the "before" of the answer benches.
 */
import { place, refusedView, type ElementView, type SubRequestShape, type SubResponseCheckOf } from '../../src/protocol/answer/response-check.js';
import { tagMemory, type MemoryTag } from '../../src/protocol/memory-tag.js';
import { agentOutputSchema } from '../../src/protocol/schemas.js';
import type { AgentInput, AgentOutput } from '../../src/protocol/types.js';

/** Addressed and refused in the gateway's words (refusedView); what the schema accepts is taken as decoded. */
function decodedView(raw: unknown): ElementView<AgentOutput> {
  const refused = refusedView(raw);
  return {
    requestId: refused.requestId,
    key: refused.key,
    validate: (key) => {
      const parsed = agentOutputSchema.safeParse(raw);
      return parsed.success ? { ok: true, candidate: parsed.data } : refused.validate(key);
    },
  };
}

export function checkSubResponse(body: unknown, shape: SubRequestShape): SubResponseCheckOf<AgentOutput> {
  if (!Array.isArray(body)) return { ok: false, reason: 'the answer is not a JSON array of AgentOutput' };
  return place(body.length, (k) => decodedView(body[k]), shape);
}

/** A decoded candidate re-addressed to the client's request, its memory tagged. */
export function fromBackend(
  requestId: string,
  input: AgentInput,
  candidateIndex: number,
  cand: AgentOutput,
  memoryKey: string,
  tag: MemoryTag,
): AgentOutput {
  return {
    request_id: requestId,
    source_id: input.id,
    candidate_index: candidateIndex,
    status: cand.status,
    memory: tagMemory(cand.memory, memoryKey, tag),
    internal_steps: cand.internal_steps,
    output: cand.output,
    error: cand.error,
  };
}
