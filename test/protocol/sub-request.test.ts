import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoryTagValue, memoryWithoutTag } from '../../src/protocol/memory-tag.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import type { InputSlices } from '../../src/protocol/request/raw-json.js';
import { subRequestBody } from '../../src/protocol/request/sub-request.js';

const LIMITS = { maxOutputsPerInput: 8, maxJsonDepth: 16, memoryKey: '_gw' };

function slices(inputs: string): { raw: InputSlices[]; rid: Buffer } {
  const r = readAgentRequest(Buffer.from(`{"request_id": "r\\u00e9", "inputs": [${inputs}]}`), LIMITS);
  if (!r.ok) return assert.fail(JSON.stringify(r));
  const rid = r.index.buf.subarray(r.index.requestIdSpan.start, r.index.requestIdSpan.end);
  return { raw: r.request.inputs.map((i) => i.raw ?? assert.fail('no raw slices')), rid };
}

const withMemory = (memory: string): string => `{"id":1,"instruction":{"type":"user","content":""},"memory":${memory}}`;
const cut = (memory: string): string => Buffer.concat(memoryWithoutTag(slices(withMemory(memory)).raw[0]!)).toString();

test('the memory tag is cut out wherever it stands, every other byte of memory kept', () => {
  assert.equal(cut('{"b":1,"10":2,"_gw":{"backend":"x"}}'), '{"b":1,"10":2}');
  assert.equal(cut('{ "_gw":{"backend":"x"} , "b":1,"10":2 }'), '{ "b":1,"10":2 }');
  assert.equal(cut('{"b":1, "_gw":0, "10":[1.0, -0, 1e5]}'), '{"b":1, "10":[1.0, -0, 1e5]}');
  assert.equal(cut('{ "_gw":0 }'), '{  }');
  assert.equal(cut('{"_gw":0,"_gw":1,"a":2,"_gw":3,"b":4,"_gw":5}'), '{"a":2,"b":4}');
  assert.equal(cut('{"a":{"_gw":1}}'), '{"a":{"_gw":1}}');
});

test('the tag value is the last tag member, decoded', () => {
  assert.deepEqual(memoryTagValue(slices(withMemory('{"_gw":1,"x":2,"_gw":{"backend":"b","route":"r"}}')).raw[0]!), { backend: 'b', route: 'r' });
  assert.equal(memoryTagValue(slices(withMemory('{"x":2}')).raw[0]!), undefined);
});

test('a sub-request is the request_id as sent and each input as sent, its memory untagged and num_outputs the leg count', () => {
  const a = '{"id": 10, "instruction": {"type":"env","content":"x"}, "tools": [ {} ], "attributes": {"s":1}, "memory": {"b":1,"_gw":0,"10":2}, "num_outputs": 4, "extra_keys": {"k":[]}}';
  const b = '{"instruction":{"type":"user","content":""},"id":-0}';
  const { raw, rid } = slices(`${a}, ${b}`);
  const body = subRequestBody(rid, [
    { raw: raw[0]!, count: 2 },
    { raw: raw[1]!, count: 1 },
  ]).toString();
  assert.equal(
    body,
    '{"request_id":"r\\u00e9","inputs":[' +
      '{"id":10,"instruction":{"type":"env","content":"x"},"tools":[ {} ],"attributes":{"s":1},"memory":{"b":1,"10":2},"num_outputs":2,"extra_keys":{"k":[]}},' +
      '{"id":-0,"instruction":{"type":"user","content":""}}]}',
  );
  const same = subRequestBody(rid, [{ raw: raw[0]!, count: 4 }]).toString();
  assert.match(same, /"num_outputs":4,/);
  const more = subRequestBody(rid, [{ raw: raw[1]!, count: 3 }]).toString();
  assert.match(more, /"num_outputs":3}/);
});
