/**
 * The answer indexer and the decoded reader (parseExact + agentOutputSchema, whose words every refusal uses) agree
 * on what a candidate is; answer-differential.test.ts checks it over generated answers, these name the cases.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkAnswerBytes, decisionOf } from '../../src/protocol/answer/answer-check.js';
import { IndexedCandidate } from '../../src/protocol/answer/response-check.js';

const KEY = '_gw';

test('a field repeated with a broken value first counts by its last occurrence, as the decoded reader keeps it', () => {
  const text =
    '[{"request_id":"","request_id":"r1","source_id":1,"candidate_index":0,"status":"x","status":"completed","memory":[],"memory":{"a":1},' +
    '"internal_steps":[1],"internal_steps":[],"output":{"say":1,"say":"x"},' +
    '"output":{"say":2,"tool_calls":[{"name":"p","arguments":1,"arguments":{},"target_robot_name":"r"}],"say":"y"}}]';
  const check = checkAnswerBytes(Buffer.from(text), { requestId: 'r1', inputs: [{ id: 1, count: 1 }] }, 16, KEY, 16);
  assert.ok(check.ok, check.ok ? '' : check.reason);
  const slot = check.slots[0]?.[0];
  assert.ok(slot?.ok && slot.candidate instanceof IndexedCandidate, 'taken from its bytes by the indexer');
  assert.deepEqual(decisionOf(slot.candidate), { completed: true, output: { say: 'y', tool_calls: [{ name: 'p', arguments: {}, target_robot_name: 'r' }] } });
});
