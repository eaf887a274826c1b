import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import { isNumberMark, stringifyExact } from '../../src/protocol/json/exact-json.js';
import { parseAgentRequest } from '../../src/protocol/request.js';

const LIMITS = { maxOutputsPerInput: 8, maxJsonDepth: 16, memoryKey: '_gw' };

test('a body that is not UTF-8 is a 400 naming the first bad byte, before any JSON check', () => {
  const head = Buffer.from('{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"a');
  const body = Buffer.concat([head, Buffer.from([0xff]), Buffer.from('"}}]}')]);
  const r = readAgentRequest(body, LIMITS);
  assert.equal(r.ok, false);
  if (r.ok || r.status !== 400) return assert.fail('expected a 400');
  assert.equal(r.offset, head.length);
  assert.match(r.message, new RegExp(`not valid UTF-8 \\(byte ${head.length}\\)`));
  const broken = readAgentRequest(Buffer.from([0x7b, 0xc3]), LIMITS);
  assert.equal(!broken.ok && broken.status, 400);
});

test('a refused body gets the 422 detail parseAgentRequest gives it', () => {
  for (const text of [
    '{"request_id":"r","inputs":[{"id":1.0,"instruction":{"type":"user","content":""}}]}',
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"num_outputs":9}]}',
    '{"request_id":"r","inputs":[], "x": {"a": [1,2]}}',
    '{"request_id":"r","inputs":[',
    '',
  ]) {
    const r = readAgentRequest(Buffer.from(text), LIMITS);
    const oracle = parseAgentRequest(text, LIMITS);
    assert.ok(!oracle.ok);
    assert.ok(!r.ok && r.status === 422, text);
    if (!r.ok && r.status === 422 && !oracle.ok) assert.deepEqual(r.detail, oracle.detail);
  }
});

test('a valid body reads as the request parseAgentRequest gives, its free-form values decoded on demand', () => {
  const text =
    '{"request_id":"r","inputs":[{"id":99999999999999999999,"instruction":{"type":"env","content":"{}"},' +
    '"tools":[{"name":"t"}],"attributes":{"a":[1]},"memory":{"x":1.0,"h":[{"k":"v"}]},"num_outputs":2,"extra_keys":{"coaching":true}}]}';
  const r = readAgentRequest(Buffer.from(text), LIMITS);
  const oracle = parseAgentRequest(text, LIMITS);
  assert.ok(r.ok && oracle.ok);
  const [inp] = r.request.inputs;
  assert.ok(inp?.raw);
  assert.equal(inp.raw.memory.decoded, false, 'memory is not decoded before something reads it');
  assert.deepEqual(inp.toJSON(), oracle.request.inputs[0]);
  assert.equal(inp.raw.memory.decoded, true, 'reading memory decoded it');
  assert.ok(isNumberMark((inp.memory as { x: unknown }).x), 'the decoded memory holds the number 1.0 as a marker');
  assert.ok(isNumberMark(inp.id), 'the id is a number marker');
  assert.equal(stringifyExact({ id: inp.id, memory: inp.memory }), '{"id":99999999999999999999,"memory":{"x":1.0,"h":[{"k":"v"}]}}');
  assert.equal(JSON.stringify(Object.keys(inp.toJSON())), '["id","instruction","num_outputs","tools","attributes","memory","extra_keys"]');
  assert.deepEqual(Object.keys(inp), ['id', 'instruction', 'num_outputs'], 'the body and the decoded fields are not own properties');
});
