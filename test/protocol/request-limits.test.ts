/**
 * The batch size limits (src/protocol/request-limits.ts) as a pure function: candidates and the estimated
 * answer size, each named by its config key, and memory measured at most once per input.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CANDIDATE_OVERHEAD_BYTES, checkBatchLimits } from '../../src/protocol/request-limits.js';

const limits = { maxCandidates: 100, maxAnswerBytes: 1024 * 1024, maxAnswerMb: 1 };
const outputs = (...n: number[]): { num_outputs: number }[] => n.map((num_outputs) => ({ num_outputs }));

test('over max_candidates_per_batch: one 422 detail naming the key, memory never measured', () => {
  let measured = 0;
  const detail = checkBatchLimits(outputs(60, 41), () => (measured++, 10), limits);
  assert.equal(detail.length, 1);
  assert.deepEqual(detail[0]!.loc, ['body', 'inputs']);
  assert.match(detail[0]!.msg, /101 candidates.*at most 100 \(server\.max_candidates_per_batch\)/);
  assert.equal(measured, 0);
  assert.deepEqual(checkBatchLimits(outputs(60, 40), () => 10, limits), []);
});

test('over max_answer_mb: num_outputs x (memory + overhead) summed over inputs; stops measuring once over', () => {
  const perCandidate = 20_000;
  const memory = perCandidate - CANDIDATE_OVERHEAD_BYTES;
  const seen: number[] = [];
  // 52 candidates x 20,000 bytes = 1,040,000 bytes: just under 1 MiB (1,048,576).
  assert.deepEqual(checkBatchLimits(outputs(50, 2), (i) => (seen.push(i), memory), limits), []);
  assert.deepEqual(seen, [0, 1], 'each input measured once');
  seen.length = 0;
  const detail = checkBatchLimits(outputs(50, 3, 1, 1), (i) => (seen.push(i), memory), limits);
  assert.equal(detail.length, 1);
  assert.match(detail[0]!.msg, /exceed 1 MiB \(server\.max_answer_mb\).*inputs\[1\]/);
  assert.deepEqual(seen, [0, 1], 'inputs after the one that goes over are not measured');
});

test('a memory bound that fits skips measuring; one that does not fit measures', () => {
  let measured = 0;
  assert.deepEqual(checkBatchLimits(outputs(10), () => (measured++, 1), limits, 10_000), []);
  assert.equal(measured, 0);
  const detail = checkBatchLimits(outputs(10), () => (measured++, 200_000), limits, 300_000);
  assert.equal(measured, 1);
  assert.equal(detail.length, 1);
});

test('inputs asking one candidate are measured only when the bound for them together does not fit', () => {
  const seen: number[] = [];
  // The largest num_outputs x the bound is over 1 MiB, so input 3 is measured; the three single inputs
  // together are bounded by 100,000 bytes, which fits with it.
  assert.deepEqual(checkBatchLimits(outputs(1, 1, 1, 20), (i) => (seen.push(i), 1000), limits, 100_000), []);
  assert.deepEqual(seen, [3]);
  seen.length = 0;
  // Here they do not fit together by the bound: measured, and within the limit.
  assert.deepEqual(checkBatchLimits(outputs(1, 1, 1, 20), (i) => (seen.push(i), i === 3 ? 50_000 : 1000), limits, 900_000), []);
  assert.deepEqual(seen, [3, 0, 1, 2]);
  seen.length = 0;
  // Without a bound every input is measured, and a single input can be the one that goes over.
  const detail = checkBatchLimits(outputs(2, 1), (i) => (seen.push(i), i === 0 ? 10 : 2_000_000), limits);
  assert.match(detail[0]!.msg, /inputs\[1\]/);
  assert.deepEqual(seen, [0, 1]);
});

test('the request_id counts in every candidate: a long one alone can take the answer over max_answer_mb', () => {
  const id = 900;
  // 100 candidates x (512 + 900) = 141,200 bytes: fits 1 MiB; x 10,000 bytes of id: 1,051,200, over.
  assert.deepEqual(checkBatchLimits(outputs(100), () => 0, { ...limits, requestIdBytes: id }, 0), []);
  let measured = 0;
  const detail = checkBatchLimits(outputs(100), () => (measured++, 0), { ...limits, requestIdBytes: 10_000 }, 0);
  assert.equal(detail.length, 1);
  assert.deepEqual(detail[0]!.loc, ['body', 'request_id']);
  assert.match(detail[0]!.msg, /exceed 1 MiB \(server\.max_answer_mb\): every candidate carries the request_id \(10000 bytes\)/);
  assert.equal(measured, 0, 'no memory measured once the ids alone are over');
});

test("each input's id counts in every one of its candidates: a long id x num_outputs is refused before any memory is measured", () => {
  // 100 candidates x (512 + 9,000 bytes of id) = 951,200 bytes: fits 1 MiB; 99 of them with 11,000 bytes of id: over.
  assert.deepEqual(checkBatchLimits(outputs(100), () => 0, { ...limits, idBytes: () => 9_000 }, 0), []);
  let measured = 0;
  const ids = [10, 11_000];
  const detail = checkBatchLimits(outputs(1, 99), () => (measured++, 0), { ...limits, idBytes: (i) => ids[i]! }, 0);
  assert.equal(detail.length, 1);
  assert.deepEqual(detail[0]!.loc, ['body', 'inputs']);
  assert.match(detail[0]!.msg, /exceed 1 MiB \(server\.max_answer_mb\): every candidate carries .*id.*inputs\[1\]/);
  assert.equal(measured, 0, 'no memory measured once the ids alone are over');
});
