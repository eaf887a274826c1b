/**
 * What the JS objects built over a batch's bytes cost (docs/memory-budget.md#what-is-counted). Upper estimates
 * (V8 spends about 8 bytes a field and 16 an object header): the budget must not be under.
 */
import { candidateCount } from '../protocol/request-limits.js';

/** One indexed input: its index, spans, instruction, the input object and its raw slices, its plan entry. */
const INPUT_BYTES = 1536;
/** One candidate: the output object (or its indexed form) and its slot. */
const CANDIDATE_BYTES = 512;

export function requestObjectsEstimate(inputs: readonly { num_outputs: number }[]): number {
  return inputs.length * INPUT_BYTES + candidateCount(inputs) * CANDIDATE_BYTES;
}
