/**
 * What the JS objects built over a batch's bytes cost (docs/memory-budget.md#what-is-counted). Upper estimates
 * (V8 spends about 8 bytes a field and 16 an object header): the budget must not be under.
 */

/** One indexed input: its index, spans, instruction, the input object and its raw slices, its plan entry. */
const INPUT_BYTES = 1536;
/** One candidate: the output object (or its indexed form) and its slot. */
const CANDIDATE_BYTES = 512;

export function requestObjectsEstimate(inputs: readonly { num_outputs: number }[]): number {
  let candidates = 0;
  for (const inp of inputs) candidates += inp.num_outputs;
  return inputs.length * INPUT_BYTES + candidates * CANDIDATE_BYTES;
}
