/** A batch's record for the console (src/batch/batch-record.ts): pure, from the request's ids, the plan and the result. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { consoleRecord, INPUT_ID_CHARS } from '../../src/batch/batch-record.js';
import type { BatchResult } from '../../src/dispatch/batch-types.js';
import type { BatchPlan } from '../../src/routing/plan.js';

type Out = BatchResult['outputs'][number];
const ok = (id: number): Out => ({ request_id: 'r', source_id: id, candidate_index: 0, status: 'completed', memory: {}, internal_steps: [], output: { type: 'message', content: 'x' }, error: null } as unknown as Out); // only status and error are read
const bad = (id: number, code: string): Out => ({ request_id: 'r', source_id: id, candidate_index: 0, status: 'error', memory: { secret: 1 }, internal_steps: [], output: null, error: { code, message: 'm', component: null } } as unknown as Out);

function source(over: Partial<BatchResult> = {}, inputsKept = 100) {
  const longId = '9'.repeat(40);
  const plan = { inputs: [0, 1, 2].map((index) => ({ index, route: 'ab', arm: index === 1 ? 'b' : 'a', sticky: true, continued: false, legs: [{ backend: index === 1 ? 'b' : 'a', count: 2, offset: 0, fallbacks: [] }], shadows: [] })) } as unknown as BatchPlan; // the fields read
  const result: BatchResult = {
    outputs: [ok(1), ok(1), ok(2), bad(2, 'gateway_backend_timeout'), bad(3, 'agent_error'), bad(3, 'agent_error')],
    workMs: 0.1, backends: { b: 2, a: 4 }, errorCodes: { gateway_backend_timeout: 1, agent_error: 2 },
    legs: [{ input: 0, backend: 'a', route: 'ab' }, { input: 1, backend: 'b', route: 'ab' }, { input: 2, backend: 'c', route: 'ab' }],
    cached: new Set([0]),
    ...over,
  };
  return { request: { request_id: 'r', inputs: [{ id: 1, num_outputs: 2 }, { id: 2, num_outputs: 2 }, { id: longId, num_outputs: 2 }] }, plan, result, agent: 'default', client: null, cacheHits: 1, durationMs: 1.23456, overheadMs: 0.4321, inputsKept };
}

test('each input: its status from its own candidates, its first error code, the cache, the backend that answered; ids cut', () => {
  const r = consoleRecord(source());
  assert.deepEqual(r.input_rows.map((x) => [x.id, x.arm, x.backend, x.status, x.cached, x.error_code]), [
    ['1', 'a', null, 'completed', true, null],
    ['2', 'b', 'b', 'mixed', false, 'gateway_backend_timeout'],
    ['9'.repeat(INPUT_ID_CHARS), 'a', 'c', 'error', false, 'agent_error'],
  ]);
  assert.equal(r.duration_ms, 1.235, 'to the microsecond');
  assert.equal(r.overhead_ms, 0.432);
  assert.deepEqual(Object.keys(r.backends), ['a', 'b'], 'by name, whatever answered first');
  assert.equal(r.cache_hits, 1);
  assert.equal(r.streamed, false);
  assert.ok(!JSON.stringify(r).includes('secret'), 'no memory kept');
});

test('a streamed answer: candidates counted, statuses not known; inputs kept up to admin.batch_inputs_kept', () => {
  const r = consoleRecord(source({ outputs: [], streamed: 6 }, 2));
  assert.equal(r.streamed, true);
  assert.equal(r.candidates, 6);
  assert.deepEqual(r.input_rows.map((x) => x.status), [null, null]);
  assert.equal(r.inputs, 3);
});
