/**
 * Limits on what one valid request may make the gateway build, checked before any backend is called
 * (docs/configuration.md#limits-and-timeouts).
 *
 * A request is small but its answer need not be: every candidate, an error candidate too, carries its input's
 * memory, so one input with 600 KB of memory and `num_outputs: 1024` asks for a 600 MB answer, more than a
 * JavaScript string can hold. Both the number of candidates and that estimated size are bounded, and a request
 * over either is a 422 naming the config key, like any other invalid request.
 */
import type { AgentInput, ValidationIssue } from './types.js';

/**
 * What a candidate costs in the answer besides its memory: request_id, source_id, candidate_index, status,
 * the gateway's memory tag, an error object or an output. A floor, so the estimate never undercounts the
 * error candidates the gateway itself would write.
 */
export const CANDIDATE_OVERHEAD_BYTES = 512;

interface BatchLimits {
  /** server.max_candidates_per_batch */
  maxCandidates: number;
  /** server.max_answer_mb, in bytes */
  maxAnswerBytes: number;
  /** The key names as the config spells them, for the messages. */
  maxAnswerMb: number;
  /**
   * The bytes of the batch's `request_id` as every candidate writes it (a JSON string, escapes included): the
   * client chooses its length, and each candidate, an error candidate too, repeats it.
   */
  requestIdBytes?: number;
}

/**
 * Problems with the batch's size as 422 details (empty when within limits).
 *
 * `memorySize(i)` gives the byte size of input i's memory. It is called at most once per input, not at all
 * when the candidate count is already over its limit, and no more once the estimate is over. `memoryBound`,
 * when given, bounds the memories of all inputs together: for a body whose numbers are all canonical, the
 * body's byte length (re-serialized memory is never longer than its text in the body). With it, nothing is
 * measured when even the bound fits (a BENCH batch: one candidate per input), and inputs asking one
 * candidate are measured only when the bound for them together does not fit.
 */
export function checkBatchLimits(
  inputs: readonly Pick<AgentInput, 'num_outputs'>[],
  memorySize: (index: number) => number,
  limits: BatchLimits,
  memoryBound?: number,
): ValidationIssue[] {
  let candidates = 0;
  let most = 0;
  for (const input of inputs) {
    candidates += input.num_outputs;
    if (input.num_outputs > most) most = input.num_outputs;
  }
  if (candidates > limits.maxCandidates) {
    return [
      {
        type: 'too_long',
        loc: ['body', 'inputs'],
        msg: `the batch asks for ${candidates} candidates (sum of num_outputs); at most ${limits.maxCandidates} (server.max_candidates_per_batch)`,
        input: candidates,
      },
    ];
  }
  const max = limits.maxAnswerBytes;
  let answer = candidates * (CANDIDATE_OVERHEAD_BYTES + (limits.requestIdBytes ?? 0));
  if (answer > max) return [answerTooBig(limits, answer, undefined)];
  // The sum of num_outputs x memory is at most the largest num_outputs x all memories together.
  if (memoryBound !== undefined && answer + most * memoryBound <= max) return [];
  let singles = false;
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i]; // i < inputs.length (loop bound)
    if (input === undefined) continue;
    const n = input.num_outputs;
    if (n === 1) {
      singles = true;
      continue;
    }
    answer += n * memorySize(i);
    if (answer > max) return [answerTooBig(limits, answer, i)];
  }
  if (!singles || (memoryBound !== undefined && answer + memoryBound <= max)) return [];
  for (let i = 0; i < inputs.length; i++) {
    if (inputs[i]?.num_outputs !== 1) continue; // i < inputs.length (loop bound)
    answer += memorySize(i);
    if (answer > max) return [answerTooBig(limits, answer, i)];
  }
  return [];
}

/** `index`: the input whose memory took the estimate over; undefined when the request_id alone did. */
function answerTooBig(limits: BatchLimits, answer: number, index: number | undefined): ValidationIssue {
  const over =
    index === undefined
      ? `carries the request_id (${limits.requestIdBytes ?? 0} bytes): the sum of num_outputs x the request_id is over the limit`
      : `carries the request_id and its input's memory (num_outputs x memory size, summed over inputs, is over the limit by inputs[${index}])`;
  return {
    type: 'too_long',
    loc: index === undefined ? ['body', 'request_id'] : ['body', 'inputs'],
    msg: `the answer to this batch would exceed ${limits.maxAnswerMb} MiB (server.max_answer_mb): every candidate ${over}`,
    input: Math.ceil(answer / (1024 * 1024)),
  };
}
