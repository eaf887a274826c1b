/** Every candidate carries its input's memory and id: 600 KB times `num_outputs: 1024` is a 600 MB answer. */
import type { AgentInput, ValidationIssue } from './types.js';

/** A candidate's bytes besides its memory: a floor, so error candidates the gateway writes are never undercounted. */
export const CANDIDATE_OVERHEAD_BYTES = 512;

type Counted = readonly Pick<AgentInput, 'num_outputs'>[];

/** Where each input's candidates start in an answer's `outputs` (the contract's order), the total last. */
export function candidateStarts(inputs: Counted): number[] {
  const starts = [0];
  let at = 0;
  for (const input of inputs) starts.push((at += input.num_outputs));
  return starts;
}

export function candidateCount(inputs: Counted): number {
  let n = 0;
  for (const input of inputs) n += input.num_outputs;
  return n;
}

interface BatchLimits {
  maxCandidates: number;
  maxAnswerBytes: number;
  maxAnswerMb: number;
  /** The request_id as every candidate repeats it (a JSON string): the client chooses its length. */
  requestIdBytes?: number;
  /**
   * Input `index`'s id as each of its candidates repeats it (`source_id`, the body's digits): the client chooses
   * its length too, a million digits in a 1 MB body. Known without reading the input, so called for every one.
   */
  idBytes?: (index: number) => number;
}

/**
 * `memorySize(i)` is called at most once per input; `memoryBound` bounds all memories together, so nothing is
 * measured when it fits.
 */
export function checkBatchLimits(
  inputs: Counted,
  memorySize: (index: number) => number,
  limits: BatchLimits,
  memoryBound?: number,
): ValidationIssue[] {
  const candidates = candidateCount(inputs);
  const most = inputs.reduce((m, input) => Math.max(m, input.num_outputs), 0);
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
  const idBytes = limits.idBytes;
  if (idBytes !== undefined) {
    for (let i = 0; i < inputs.length; i++) {
      answer += (inputs[i]?.num_outputs ?? 0) * idBytes(i); // i < inputs.length (loop bound)
      if (answer > max) return [answerTooBig(limits, answer, i)];
    }
  }
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

/** `index` undefined: the request_id alone took the estimate over. */
function answerTooBig(limits: BatchLimits, answer: number, index: number | undefined): ValidationIssue {
  const over =
    index === undefined
      ? `carries the request_id (${limits.requestIdBytes ?? 0} bytes): the sum of num_outputs x the request_id is over the limit`
      : `carries the request_id and its input's id and memory (num_outputs x (id + memory size), summed over inputs, is over the limit by inputs[${index}])`;
  return {
    type: 'too_long',
    loc: index === undefined ? ['body', 'request_id'] : ['body', 'inputs'],
    msg: `the answer to this batch would exceed ${limits.maxAnswerMb} MiB (server.max_answer_mb): every candidate ${over}`,
    input: Math.ceil(answer / (1024 * 1024)),
  };
}
