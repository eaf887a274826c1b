/**
 * The memory tag written into memory bytes (src/protocol/memory-tag.ts): the other members exactly as sent,
 * every tag member cut (an input's memory) or the first one replaced in place (a backend's), whatever their
 * position; and the pieces of an answer summing to its length.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinBody, PartsWriter } from '../../src/protocol/answer/answer-body.js';
import { inputMemoryLayout, taggedMemory } from '../../src/protocol/memory-tag.js';
import { indexAgentResponse } from '../../src/protocol/answer/answer-index.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';

const KEY = '_gw';
const TAG = Buffer.from('"_gw":{"backend":"a"}');

function inputMemory(memory: string): string {
  const body = Buffer.from(`{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"env","content":"x"},"memory":${memory}}]}`);
  const read = readAgentRequest(body, { maxOutputsPerInput: 4, maxJsonDepth: 16, memoryKey: KEY });
  assert.ok(read.ok);
  const out: Buffer[] = [];
  taggedMemory(body, inputMemoryLayout(read.request.inputs[0]!.raw), TAG, false, out);
  return Buffer.concat(out).toString();
}

function backendMemory(memory: string): string {
  const buf = Buffer.from(`[{"request_id":"r","source_id":1,"candidate_index":0,"status":"completed","output":{},"memory":${memory}}]`);
  const idx = indexAgentResponse(buf, 16, KEY);
  assert.ok(idx.ok);
  const cand = idx.elements[0]!.candidate;
  assert.ok(cand);
  const out: Buffer[] = [];
  taggedMemory(buf, cand.memory, TAG, true, out);
  return Buffer.concat(out).toString();
}

test("an input's memory loses every tag member wherever it stands and gets the new tag last", () => {
  assert.equal(inputMemory('{}'), '{"_gw":{"backend":"a"}}');
  assert.equal(inputMemory('{ "b" : 1 }'), '{ "b" : 1,"_gw":{"backend":"a"} }');
  assert.equal(inputMemory('{"_gw":1}'), '{"_gw":{"backend":"a"}}');
  assert.equal(inputMemory('{"_gw":1,"b":2}'), '{"b":2,"_gw":{"backend":"a"}}');
  assert.equal(inputMemory('{"b":2,"_gw":1}'), '{"b":2,"_gw":{"backend":"a"}}');
  assert.equal(inputMemory('{"10":1,"_gw":1,"_gw":2,"2":[1.0],"_gw":3,"c":-0}'), '{"10":1,"2":[1.0],"c":-0,"_gw":{"backend":"a"}}');
  assert.equal(inputMemory('{"\\u005fgw":1,"x":"\\u00e9"}'), '{"x":"\\u00e9","_gw":{"backend":"a"}}');
});

test("a backend's memory gets the tag in place of its first tag member, later ones cut", () => {
  assert.equal(backendMemory('{}'), '{"_gw":{"backend":"a"}}');
  assert.equal(backendMemory('{"b":1}'), '{"b":1,"_gw":{"backend":"a"}}');
  assert.equal(backendMemory('{"b":1,"_gw":0,"c":2}'), '{"b":1,"_gw":{"backend":"a"},"c":2}');
  assert.equal(backendMemory('{"_gw":0,"c":2,"_gw":5}'), '{"_gw":{"backend":"a"},"c":2}');
});

test('an answer in pieces has the bytes and the length of its text, big pieces kept as they are', () => {
  const big = Buffer.alloc(10_000, 0x61);
  const w = new PartsWriter();
  w.text('[');
  w.push(big);
  w.text(',"é"]');
  const body = w.done();
  assert.equal(body.length, Buffer.byteLength(`[${'a'.repeat(10_000)},"é"]`));
  assert.ok(body.parts.includes(big), 'the big piece is referenced, not copied');
  assert.equal(joinBody(body).toString(), `[${'a'.repeat(10_000)},"é"]`);
});
