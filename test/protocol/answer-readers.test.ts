/**
 * The answer indexer and the decoded reader (parseExact + agentOutputSchema, whose words every refusal uses) agree
 * on what a candidate is; answer-differential.test.ts checks it over generated answers, these name the cases. A
 * slot holds only what the indexer took: where they would disagree, the slot or the answer fails saying so.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexAgentResponse } from '../../src/protocol/answer/answer-index.js';
import { checkAnswerBytes, decisionOf, placeAnswer } from '../../src/protocol/answer/answer-check.js';
import { checkIndexedResponse, IndexedCandidate } from '../../src/protocol/answer/response-check.js';

const KEY = '_gw';
const SHAPE = { requestId: 'r1', inputs: [{ id: 1, count: 2 }] };
const candidate = (c: number, extra = ''): string =>
  `{"request_id":"r1","source_id":1,"candidate_index":${c},"status":"completed","memory":{}${extra},"output":{"say":"x"}}`;

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

// No answer makes the readers disagree (the differential test would fail): the indexer's refusal is forced by
// handing the placement what the indexer hands over when it refuses, for bytes the decoded reader accepts.

test('an element the indexer refused and the decoded reader accepts fails its slot, saying the readers disagree', () => {
  const buf = Buffer.from(`[${candidate(0)},${candidate(1, ',"extra":1')}]`);
  const indexed = indexAgentResponse(buf, 16, KEY);
  assert.ok(indexed.ok);
  const [first, second] = indexed.elements;
  assert.ok(first?.candidate !== undefined && second !== undefined && second.candidate === undefined);
  // A refused element is its span and no candidate.
  const check = checkIndexedResponse(buf, [{ span: first.span, candidate: undefined }, second], SHAPE);
  assert.ok(check.ok);
  assert.deepEqual(check.slots[0], [
    { ok: false, reason: 'the indexer refused candidate 1/0, which the decoded reader accepts' },
    // Refused by both: the schema's words.
    { ok: false, reason: 'candidate 1/1 is malformed: (root): Unrecognized key: "extra"' },
  ]);
});

test('an answer the indexer refused whole and the decoded reader reads as an array fails, saying the readers disagree', () => {
  const refused = 'the answer is not a valid AgentResponse: forced at byte 0';
  const outcome = { ok: false, skip: 0, reason: refused, decode: true } as const;
  assert.deepEqual(placeAnswer(Buffer.from(`[${candidate(0)},${candidate(1)}]`), outcome, SHAPE, 16), {
    ok: false,
    reason: `the indexer refused the answer, which the decoded reader accepts (${refused})`,
  });
  // Refused by both: the decoded reader's words.
  assert.deepEqual(placeAnswer(Buffer.from('{"a":1}'), outcome, SHAPE, 16), { ok: false, reason: 'the answer is not a JSON array of AgentOutput' });
  assert.deepEqual(placeAnswer(Buffer.from(`[${candidate(0)}`), outcome, SHAPE, 16).ok, false);
});

test('a say, a tool call and an error are judged by their string tokens, escapes and empty strings included', () => {
  const take = (output: string, status = 'completed'): boolean => {
    const body = `[{"request_id":"r1","source_id":1,"candidate_index":0,"status":"${status}","memory":{},${output}}]`;
    const indexed = indexAgentResponse(Buffer.from(body), 16, KEY);
    return indexed.ok && indexed.elements[0]?.candidate !== undefined;
  };
  // An empty say is a string; only a call's name and robot, and an error's code and message, must not be empty.
  assert.equal(take('"output":{"say":""}'), true);
  assert.equal(take('"output":{"say":"\\"\\u00e9\\\\"}'), true);
  assert.equal(take('"output":{"say":null}'), false);
  assert.equal(take('"output":{"say":"x","tool_calls":[{"name":"","arguments":{},"target_robot_name":"r"}]}'), false);
  assert.equal(take('"output":{"say":"x","tool_calls":[{"name":"\\u0000","arguments":{},"target_robot_name":"r"}]}'), true);
  assert.equal(take('"error":{"code":"c","message":""}', 'error'), false);
  assert.equal(take('"error":{"code":"\\n","message":"m"}', 'error'), true);
  assert.equal(take('"error":{"code":1,"message":"m"}', 'error'), false);
});
