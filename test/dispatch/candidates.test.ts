/**
 * Error candidates (src/dispatch/candidates.ts, docs/protocol-fidelity.md#failures): written from their input's
 * bytes, the old tag cut and the new one last; read as a plain output, their JSON the same candidate as their
 * bytes, in the contract's order; their fields on the class, never on the object (docs/performance.md#batches-die-young).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerBody, candidateTag, CandidateWriter } from '../../src/dispatch/answer-bytes.js';
import { ErrorCandidate } from '../../src/dispatch/candidates.js';
import { joinBody } from '../../src/protocol/answer/answer-body.js';
import type { IndexedAgentInput } from '../../src/protocol/request/indexed-request.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';

const KEY = '_gw';
const LIMITS = { maxOutputsPerInput: 8, maxJsonDepth: 16, memoryKey: KEY };

function inputWithMemory(memory: string): IndexedAgentInput {
  const body = `{"request_id":"r1","inputs":[{"id":7,"instruction":{"type":"env","content":"x"},"memory":${memory},"num_outputs":2}]}`;
  const r = readAgentRequest(Buffer.from(body), LIMITS);
  if (!r.ok) return assert.fail(JSON.stringify(r));
  return r.request.inputs[0] ?? assert.fail('no input');
}

test("an error candidate's JSON is its bytes' candidate, in the contract's order, and its memory is decoded only when read", () => {
  const input = inputWithMemory('{"z" : 1,"_gw":{"backend":"gone","route":"r"}, "10":{"x":"y"}}');
  const tag = { backend: 'a', route: 'r' };
  const out = new ErrorCandidate(new CandidateWriter('r1', KEY), 'r1', input, 1, 'gateway_backend_timeout', '', 'a', tag);
  const bytes = joinBody(answerBody([out])).toString('utf8');
  assert.equal(
    bytes,
    '[{"request_id":"r1","source_id":7,"candidate_index":1,"status":"error","memory":{"z" : 1,"10":{"x":"y"},"_gw":{"backend":"a","route":"r"}},' +
      '"internal_steps":[],"output":null,"error":{"code":"gateway_backend_timeout","message":"gateway_backend_timeout","component":"a"}}]',
  );
  assert.equal(input.raw.memory.decoded, false, 'writing the candidate decodes no memory');
  const json = JSON.stringify(out);
  assert.equal(
    JSON.stringify(Object.keys(JSON.parse(json) as object)),
    '["request_id","source_id","candidate_index","status","memory","internal_steps","output","error"]',
  );
  assert.deepEqual(JSON.parse(json), (JSON.parse(bytes) as unknown[])[0]);
  assert.deepEqual(candidateTag(out), tag);
});

test('an error candidate keeps its fields on its class: no per-object accessor, symbol slot or defineProperty', () => {
  const input = inputWithMemory('{"a":[1,2]}');
  const writer = new CandidateWriter('r1', KEY);
  const tag = { backend: 'a', route: 'r' };
  const out = new ErrorCandidate(writer, 'r1', input, 0, 'gateway_backend_unreachable', 'refused', 'a', tag);
  assert.equal(JSON.stringify(Object.keys(out)), '["request_id","source_id","candidate_index","status"]');
  assert.deepEqual(Object.getOwnPropertySymbols(out), []);
  assert.equal(Object.getOwnPropertyDescriptor(out, 'memory'), undefined);
  assert.deepEqual(out.error, { code: 'gateway_backend_unreachable', message: 'refused', component: 'a' });
  assert.deepEqual(out.memory, { a: [1, 2], [KEY]: tag });
  assert.equal(out.memory, out.memory, 'decoded once');
  const sibling = new ErrorCandidate(writer, 'r1', input, 1, 'gateway_backend_unreachable', 'refused', 'a', tag);
  assert.equal(sibling.memory, out.memory, 'the error candidates of one input share its tagged memory');
});
