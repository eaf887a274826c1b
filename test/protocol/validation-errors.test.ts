/**
 * The gateway's 422 bodies against FastAPI + pydantic 2's (test/protocol/fixtures/pydantic-422.ts): same
 * type, loc, msg, input and ctx for every row, in the same order. Also the gateway's own checks (duplicate
 * ids) in the same shape, the JSON error positions against more bodies, and the bounds on echoed inputs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import { pythonJsonError } from '../../src/protocol/json/json-decode-error.js';
import { parseAgentRequest } from '../../src/protocol/request.js';
import { boundInput, INPUT_LIMITS } from '../../src/protocol/validation-errors.js';
import { PYDANTIC_422 } from './fixtures/pydantic-422.js';

const LIMITS = { maxOutputsPerInput: 1024 };

/** The detail array exactly as the gateway writes it on the wire, read back. */
function wireDetail(body: string): { text: string; detail: unknown } {
  const r = parseAgentRequest(body, LIMITS);
  assert.equal(r.ok, false, `expected a 422 for ${body}`);
  const text = r.ok ? '' : stringifyExact({ detail: r.detail });
  return { text, detail: (JSON.parse(text) as { detail: unknown }).detail };
}

for (const row of PYDANTIC_422) {
  test(`422 as FastAPI + pydantic 2: ${row.name}`, () => {
    assert.deepEqual(wireDetail(row.body).detail, row.detail);
  });
}

test('every detail has type, loc, msg and input, whatever the problem', () => {
  for (const row of PYDANTIC_422) {
    for (const d of wireDetail(row.body).detail as Record<string, unknown>[]) {
      for (const k of ['type', 'loc', 'msg', 'input']) assert.ok(k in d, `${row.name}: no ${k} in ${JSON.stringify(d)}`);
    }
  }
});

test('numbers in an echoed input stay as written (1.0, 1e0, big integers)', () => {
  const { text } = wireDetail('{"request_id":"r","inputs":[{"id":1.0,"instruction":{"type":"user","content":"x"}},{"id":12345678901234567890,"memory":{"n":1e0}}]}');
  assert.ok(text.includes('"input":1.0'), text);
  assert.ok(text.includes('"input":{"id":12345678901234567890,"memory":{"n":1e0}}'), text);
});

test('a duplicate id is echoed as the integer as written, not as a string', () => {
  const big = '99999999999999999999';
  const body = `{"request_id":"r","inputs":[{"id":${big},"instruction":{"type":"user","content":"a"}},{"id":${big},"instruction":{"type":"user","content":"b"}}]}`;
  const { text, detail } = wireDetail(body);
  const [d] = detail as Record<string, unknown>[];
  assert.deepEqual(d!.loc, ['body', 'inputs', 1, 'id']);
  assert.equal(d!.type, 'value_error');
  assert.ok(text.includes(`"input":${big}`), text);
  const small = wireDetail('{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"a"}},{"id":1,"instruction":{"type":"user","content":"b"}}]}');
  assert.equal((small.detail as Record<string, unknown>[])[0]!.input, 1);
});

test('JSON error positions and messages for more bodies, as CPython reports them', () => {
  // Computed with CPython 3.11.7: json.loads(body) -> (e.pos, e.msg).
  const cases: [string, number, string][] = [
    ['[1,]', 3, 'Expecting value'],
    ['{"a":"\\u12"}', 7, 'Invalid \\uXXXX escape'],
    ['[1.]', 2, "Expecting ',' delimiter"],
    ['[1e]', 2, "Expecting ',' delimiter"],
    ['-', 0, 'Expecting value'],
    ['{"a":1', 6, "Expecting ',' delimiter"],
    ['[1 2]', 3, "Expecting ',' delimiter"],
    ['{"a" 1}', 5, "Expecting ':' delimiter"],
    ['tru', 0, 'Expecting value'],
    ['"abc\\', 0, 'Unterminated string starting at'],
    ['{"a":[{"b":[1,{"c":}]}]}', 19, 'Expecting value'],
  ];
  for (const [body, pos, msg] of cases) assert.deepEqual(pythonJsonError(body), { pos, msg }, body);
  // Python accepts these; the contract wants finite numbers, so the gateway does not.
  assert.deepEqual(pythonJsonError('[NaN]'), { pos: 1, msg: 'Expecting value' });
  assert.equal(pythonJsonError('{"a":[1,2,{"b":null}],"c":-0.5e+3}'), undefined);
});

test('a body nested a million levels deep gets its position without overflowing the stack', () => {
  const deep = '['.repeat(1_000_000) + ']'.repeat(999_999);
  assert.deepEqual(pythonJsonError(deep), { pos: 1_999_999, msg: "Expecting ',' delimiter" });
});

test('an echoed input is bounded in depth, entries, string length and total size', () => {
  let deep: unknown = 'bottom';
  for (let i = 0; i < 100_000; i++) deep = { d: deep };
  const bounded = JSON.stringify(boundInput(deep));
  assert.equal(bounded, '{"d":{"d":{"d":"(an object of 1 keys)"}}}');

  const wide = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]));
  const w = boundInput(wide) as Record<string, unknown>;
  assert.equal(Object.keys(w).length, INPUT_LIMITS.items + 1);
  assert.equal(w['…'], `${1000 - INPUT_LIMITS.items} more keys`);

  const long = boundInput('x'.repeat(1_000_000)) as string;
  assert.ok(long.length < INPUT_LIMITS.stringChars + 40, String(long.length));
  assert.match(long, /… \(\d+ more characters\)$/);

  const big = { memory: { history: Array.from({ length: 5000 }, (_, i) => ({ author: 'u', content: 'y'.repeat(500) + i })) } };
  assert.ok(JSON.stringify(boundInput(big)).length < INPUT_LIMITS.totalChars * 2);
});

test('a missing field in a multi-MB input echoes a bounded parent, not the whole input', () => {
  const memory = { history: Array.from({ length: 20_000 }, (_, i) => ({ author: 'agent', content: `step ${i}` })) };
  const body = JSON.stringify({ request_id: 'r', inputs: [{ id: 1, memory }] });
  assert.ok(body.length > 500_000);
  const { text, detail } = wireDetail(body);
  const [d] = detail as Record<string, unknown>[];
  assert.equal(d!.type, 'missing');
  assert.deepEqual(d!.loc, ['body', 'inputs', 0, 'instruction']);
  assert.ok(text.length < 8_000, String(text.length));
});

test('an unknown key as long as the body is cut in loc', () => {
  const key = 'k'.repeat(100_000);
  const { text } = wireDetail(`{"request_id":"r","inputs":[],"${key}":1}`);
  assert.ok(text.length < 2_000, String(text.length));
});
