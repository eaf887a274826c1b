/**
 * What the objects the gateway builds over a batch's bytes cost, charged to the batch's hold on the memory
 * budget (docs/memory-budget.md#what-is-counted). The bytes themselves (the body, the answers) are counted
 * as they arrive; these are the JS objects over them, whose number the indexers bound: a request's inputs by
 * server.max_candidates_per_batch (the indexer stops past it), an answer's elements by the candidates asked.
 *
 * Upper estimates: each is a handful of objects of a few fields (V8 spends about 8 bytes a field and 16 an
 * object header, more for arrays and maps), counted generously because the budget must not be under.
 */

/** One indexed input: its index, spans, instruction, the input object and its raw slices, its plan entry. */
export const INPUT_BYTES = 1536;
/** One candidate: the output object (or its indexed form) and its slot. */
export const CANDIDATE_BYTES = 512;

/** The objects of a read request: its inputs, and the candidates they ask for. */
export function requestObjectsEstimate(inputs: readonly { num_outputs: number }[]): number {
  let candidates = 0;
  for (const inp of inputs) candidates += inp.num_outputs;
  return inputs.length * INPUT_BYTES + candidates * CANDIDATE_BYTES;
}
