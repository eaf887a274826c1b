import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import { parseAgentRequest } from '../../src/protocol/request.js';

const LIMITS = { maxOutputsPerInput: 1024 };
const input = (over: Record<string, string> = {}): string => {
  const f: Record<string, string> = {
    id: '7',
    instruction: '{"type":"user","content":"hi"}',
    tools: '[]',
    attributes: '{}',
    memory: '{}',
    num_outputs: '1',
    extra_keys: '{}',
    ...over,
  };
  return `{${Object.entries(f)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}`;
};
const body = (inputs: string, rid = '"r1"'): string => `{"request_id":${rid},"inputs":[${inputs}]}`;

function locs(text: string): string[] {
  const r = parseAgentRequest(text, LIMITS);
  assert.equal(r.ok, false, `expected 422 for ${text}`);
  return r.ok ? [] : r.detail.map((d) => d.loc.join('.'));
}

test('a minimal valid request gets defaults', () => {
  const r = parseAgentRequest('{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"env","content":""}}]}', LIMITS);
  assert.ok(r.ok);
  if (!r.ok) return;
  assert.deepEqual(r.request.inputs[0], {
    id: 1, instruction: { type: 'env', content: '' }, tools: [], attributes: {}, memory: {}, num_outputs: 1, extra_keys: {},
  });
});

test('ids 1.0, 1e0, true and "1" are 422 at inputs.0.id', () => {
  for (const id of ['1.0', '1e0', 'true', '"1"']) assert.deepEqual(locs(body(input({ id }))), ['body.inputs.0.id'], id);
});

test('num_outputs 0, -1 and 2.0 are 422 at inputs.0.num_outputs', () => {
  for (const n of ['0', '-1', '2.0']) assert.deepEqual(locs(body(input({ num_outputs: n }))), ['body.inputs.0.num_outputs'], n);
});

test('num_outputs above server.max_outputs_per_input is 422', () => {
  assert.deepEqual(locs(body(input({ num_outputs: '1025' }))), ['body.inputs.0.num_outputs']);
  assert.deepEqual(locs(body(input({ num_outputs: '99999999999999999999' }))), ['body.inputs.0.num_outputs']);
});

test('unknown fields are 422 at every protocol level, named by location', () => {
  assert.deepEqual(locs('{"request_id":"r","inputs":[],"extra":1}'), ['body.extra']);
  assert.deepEqual(locs(body(input({ bogus: '1' }))), ['body.inputs.0.bogus']);
  assert.deepEqual(locs(body(input({ instruction: '{"type":"user","content":"x","role":"u"}' }))), [
    'body.inputs.0.instruction.role',
  ]);
});

test('duplicate input ids are 422, including -0 vs 0 and big integers', () => {
  assert.deepEqual(locs(body(`${input({ id: '3' })},${input({ id: '3' })}`)), ['body.inputs.1.id']);
  assert.deepEqual(locs(body(`${input({ id: '0' })},${input({ id: '-0' })}`)), ['body.inputs.1.id']);
  const big = '99999999999999999999';
  assert.deepEqual(locs(body(`${input({ id: big })},${input({ id: big })}`)), ['body.inputs.1.id']);
});

test('instruction.type "system" and "User" are 422', () => {
  for (const t of ['"system"', '"User"']) {
    assert.deepEqual(locs(body(input({ instruction: `{"type":${t},"content":"x"}` }))), ['body.inputs.0.instruction.type']);
  }
});

test('content that is not a string is 422 (numbers, null, and numbers kept as markers)', () => {
  for (const c of ['1', 'null', '12345678901234567890', '["x"]']) {
    assert.deepEqual(locs(body(input({ instruction: `{"type":"user","content":${c}}` }))), [
      'body.inputs.0.instruction.content',
    ], c);
  }
});

test('memory null or an array is 422; tools [1] is 422 at tools.0', () => {
  assert.deepEqual(locs(body(input({ memory: 'null' }))), ['body.inputs.0.memory']);
  assert.deepEqual(locs(body(input({ memory: '[]' }))), ['body.inputs.0.memory']);
  assert.deepEqual(locs(body(input({ tools: '[1]' }))), ['body.inputs.0.tools.0']);
});

test('NaN and Infinity are 422 as JSON errors; 1e400 anywhere is 422 at its location', () => {
  for (const bad of ['NaN', 'Infinity', '-Infinity']) {
    const r = parseAgentRequest(body(input({ memory: `{"x":${bad}}` })), LIMITS);
    assert.ok(!r.ok && r.detail[0]!.type === 'json_invalid', bad);
  }
  assert.deepEqual(locs(body(input({ memory: '{"deep":[{"x":1e400}]}' }))), ['body.inputs.0.memory.deep.0.x']);
  assert.deepEqual(locs(body(input({ attributes: '{"y":-1e400}' }))), ['body.inputs.0.attributes.y']);
});

test('request_id empty, missing or not a string is 422', () => {
  assert.deepEqual(locs(body(input(), '""')), ['body.request_id']);
  assert.deepEqual(locs(body(input(), '5')), ['body.request_id']);
  assert.deepEqual(locs(`{"inputs":[${input()}]}`), ['body.request_id']);
});

test('inputs missing or not a list is 422', () => {
  assert.deepEqual(locs('{"request_id":"r"}'), ['body.inputs']);
  assert.deepEqual(locs('{"request_id":"r","inputs":{}}'), ['body.inputs']);
});

test('a body that is not JSON, truncated, or not an object is 422', () => {
  for (const b of ['hello', '{"request_id":"r","inputs":[', '', '[1,2]']) {
    const r = parseAgentRequest(b, LIMITS);
    assert.equal(r.ok, false, b);
  }
});

test('every problem of a body is named, not just the first', () => {
  const l = locs(body(`${input({ id: '1.0', num_outputs: '0' })}`, '""'));
  assert.deepEqual(l.sort(), ['body.inputs.0.id', 'body.inputs.0.num_outputs', 'body.request_id']);
});

test('a 422 detail shows big numbers as written, never an internal marker', () => {
  const r = parseAgentRequest(body(input({ id: '1e0', memory: '{"n":12345678901234567890}' })), LIMITS);
  assert.ok(!r.ok);
  if (r.ok) return;
  const text = stringifyExact({ detail: r.detail });
  assert.ok(text.includes('"input":1e0'), text);
  assert.ok(!text.includes('\uE000'));
});

test('numbers where strings belong are string_type, as pydantic says, even when kept as markers', () => {
  const cases: [string, string][] = [
    [body(input(), '1.0'), 'body.request_id'],
    [body(input(), '12345678901234567890'), 'body.request_id'],
    [body(input({ instruction: '{"type":"user","content":1e400}' })), 'body.inputs.0.instruction.content'],
    [body(input({ instruction: '{"type":"user","content":1.0}' })), 'body.inputs.0.instruction.content'],
  ];
  for (const [text, loc] of cases) {
    const r = parseAgentRequest(text, LIMITS);
    assert.equal(r.ok, false, text);
    if (r.ok) continue;
    const issue = r.detail.find((d) => d.loc.join('.') === loc);
    assert.ok(issue, `${text}: ${JSON.stringify(r.detail)}`);
    assert.equal(issue.type, 'string_type');
    assert.equal(issue.msg, 'Input should be a valid string');
  }
  // instruction.type is a literal: a number is refused there too.
  assert.deepEqual(locs(body(input({ instruction: '{"type":1.0,"content":"x"}' }))), ['body.inputs.0.instruction.type']);
  // The 422 body is valid JSON and echoes the number as sent.
  const r = parseAgentRequest(body(input(), '1.0'), LIMITS);
  assert.ok(!r.ok);
  if (!r.ok) {
    const text = stringifyExact({ detail: r.detail });
    assert.ok(!text.includes('\uE000'));
    assert.ok(text.includes('"input":1.0'), text);
    assert.doesNotThrow(() => JSON.parse(text));
  }
});

test('an integer of 400 digits is valid anywhere and kept digit for digit; only fractions and exponents overflow', () => {
  const big = '9'.repeat(400);
  const text = body(input({ id: big, memory: `{"n":-${big}}` }));
  const r = parseAgentRequest(text, LIMITS);
  assert.ok(r.ok, JSON.stringify(!r.ok && r.detail));
  if (!r.ok) return;
  assert.equal(stringifyExact(r.request.inputs[0]?.memory), `{"n":-${big}}`);
  assert.deepEqual(locs(body(input({ memory: `{"n":${big}.5}` }))), ['body.inputs.0.memory.n']);
});
