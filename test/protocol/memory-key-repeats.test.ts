/**
 * server.max_memory_key_repeats (docs/limits-and-edges.md#repeated-keys): a memory may repeat the memory key up to
 * the bound and is forwarded as before; one more is refused where it stands, so the positions the indexers record
 * never outnumber the bound, in a request (a 422 at the input's memory) and in a backend's answer (not valid).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readBatch, readBatchYielding } from '../../src/batch/read-batch.js';
import { configSchema } from '../../src/config/schema.js';
import type { Logger } from '../../src/logging.js';
import { checkAnswerBytes } from '../../src/protocol/answer/answer-check.js';
import { indexAgentResponse } from '../../src/protocol/answer/answer-index.js';
import { inputMemoryLayout, memoryTagValue, memoryWithoutTag, taggedMemory } from '../../src/protocol/memory-tag.js';
import { DEFAULT_MAX_MEMORY_KEY_REPEATS, MemoryKeyRepeats } from '../../src/protocol/request/protocol-walker.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import { indexAgentRequest, type IndexLimits } from '../../src/protocol/request/request-index.js';
import { OFFLOAD_BYTES } from '../../src/reader/reader.js';
import { oneBackend } from '../helpers/fixtures.js';

const KEY = '_gw';
const TAG = Buffer.from('"_gw":{"backend":"a"}');
const LIMITS: IndexLimits = { maxOutputsPerInput: 4, maxJsonDepth: 16, memoryKey: KEY, maxMemoryKeyRepeats: 3 };
const server = configSchema.parse(oneBackend({ a: 'http://127.0.0.1:1' })).server;
const log: Logger = { level: 'info', error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

const input = (id: number, memory: string): string => `{"id":${id},"instruction":{"type":"env","content":"x"},"memory":${memory}}`;
const body = (memory: string): string => `{"request_id":"r","inputs":[${input(0, '{}')},${input(1, memory)}]}`;
/** `n` copies of the key, with other members around and between them. */
const repeats = (n: number, key = KEY): string => `{"a":1,${Array.from({ length: n }, (_, i) => `"${key}":${i}`).join(', ')},"b":2}`;
/** Where copy `k` (from 1) of `"key":` is in `text`. */
function copyAt(text: string, k: number, key = KEY): number {
  let at = -1;
  for (let i = 0; i < k; i++) at = text.indexOf(`"${key}":`, at + 1);
  return Buffer.byteLength(text.slice(0, at));
}

test('a memory repeating the key up to the bound is read and forwarded as before: every copy cut, the last read', () => {
  const text = body(repeats(3));
  const r = readAgentRequest(Buffer.from(text), LIMITS);
  assert.ok(r.ok);
  const raw = r.request.inputs[1]!.raw;
  assert.equal(inputMemoryLayout(raw).tags.length, 3);
  assert.equal(memoryTagValue(raw), 2);
  assert.equal(Buffer.concat(memoryWithoutTag(raw)).toString(), '{"a":1,"b":2}');
  const out: Buffer[] = [];
  taggedMemory(raw.buf, inputMemoryLayout(raw), TAG, false, out);
  assert.equal(Buffer.concat(out).toString(), '{"a":1,"b":2,"_gw":{"backend":"a"}}');
  // Only the memory key counts: other keys repeat freely.
  assert.ok(readAgentRequest(Buffer.from(body(repeats(50, 'k'))), LIMITS).ok);
});

test('one copy more is a 422 at that input\'s memory naming the key, the bound and the byte where it stopped', () => {
  const text = body(repeats(4));
  for (const limits of [LIMITS, { ...LIMITS, maxProblems: 10, maxInputs: 10 }]) {
    const r = readAgentRequest(Buffer.from(text), limits);
    assert.ok(!r.ok && r.status === 422);
    assert.deepEqual(r.detail, [
      {
        type: 'too_long',
        loc: ['body', 'inputs', 1, 'memory'],
        msg: `memory repeats the key "_gw" more than 3 times (server.max_memory_key_repeats): occurrence 4 is at byte ${copyAt(text, 4)}`,
        input: {},
        ctx: { max_length: 3 },
      },
    ]);
  }
});

test('200,000 copies stop at the first past the bound: the recorded positions never outnumber it', () => {
  const text = body(repeats(200_000));
  const r = indexAgentRequest(Buffer.from(text), LIMITS);
  assert.ok(!r.ok);
  assert.ok(r.reject instanceof MemoryKeyRepeats);
  // Refused at copy 4, after recording 3: none of the 199,996 after it was looked at.
  assert.equal(r.reject.at, copyAt(text, 4));
  assert.equal(r.reject.owner, 1);
});

test('the batch reads the bound from the config (default 16), in place and on the reader thread', async () => {
  assert.equal(server.max_memory_key_repeats, DEFAULT_MAX_MEMORY_KEY_REPEATS);
  assert.equal(DEFAULT_MAX_MEMORY_KEY_REPEATS, 16);
  const ok = readBatch(Buffer.from(body(repeats(16, '_gateway'))), server, '_gateway', log);
  assert.ok(ok.ok);
  assert.equal(inputMemoryLayout(ok.request.inputs[1]!.raw).tags.length, 16);
  const over = readBatch(Buffer.from(body(repeats(17, '_gateway'))), server, '_gateway', log);
  assert.ok(!over.ok && over.status === 422);
  assert.match(over.body, /more than 16 times \(server\.max_memory_key_repeats\)/);
  assert.ok(readBatch(Buffer.from(body(repeats(17, '_gateway'))), { ...server, max_memory_key_repeats: 17 }, '_gateway', log).ok);
  // The body of the report: a memory of nothing but the key, over OFFLOAD_BYTES so the reader thread reads it.
  const n = Math.ceil(OFFLOAD_BYTES / '"_gateway":1,'.length) + 1;
  const huge = Buffer.from(body(`{${new Array<string>(n).fill('"_gateway":1').join(',')}}`));
  assert.ok(huge.length > OFFLOAD_BYTES);
  const r = await readBatchYielding(huge, server, '_gateway', log);
  assert.ok(!r.ok && r.status === 422);
  const [issue] = (JSON.parse(r.body) as { detail: { loc: unknown[]; msg: string }[] }).detail;
  assert.deepEqual(issue?.loc, ['body', 'inputs', 1, 'memory']);
  assert.match(issue?.msg ?? '', /occurrence 17 is at byte /);
});

const answer = (memory: string): string =>
  `[{"request_id":"r","source_id":1,"candidate_index":0,"status":"completed","output":{},"memory":${memory}}]`;
const SHAPE = { requestId: 'r', inputs: [{ id: 1, count: 1 }] };

test("a backend's memory repeating the key up to the bound keeps its first copy's place for the tag", () => {
  const idx = indexAgentResponse(Buffer.from(answer(repeats(3))), 16, KEY, Number.MAX_SAFE_INTEGER, 3);
  assert.ok(idx.ok);
  const cand = idx.elements[0]!.candidate;
  assert.ok(cand);
  assert.equal(cand.memory.tags.length, 3);
  const out: Buffer[] = [];
  taggedMemory(Buffer.from(answer(repeats(3))), cand.memory, TAG, true, out);
  assert.equal(Buffer.concat(out).toString(), '{"a":1,"_gw":{"backend":"a"},"b":2}');
  assert.ok(checkAnswerBytes(Buffer.from(answer(repeats(3))), SHAPE, 16, KEY, 3).ok);
});

test("a backend's memory past the bound makes the answer invalid, even small enough to decode, where it stopped", () => {
  for (const n of [4, 200_000]) {
    const text = answer(repeats(n));
    const check = checkAnswerBytes(Buffer.from(text), SHAPE, 16, KEY, 3);
    assert.deepEqual(check, {
      ok: false,
      reason: `the answer is not a valid AgentResponse: candidate [0]'s memory repeats the key "_gw" more than 3 times (server.max_memory_key_repeats) at byte ${copyAt(text, 4)}`,
    });
  }
  // A streamed answer indexes each candidate alone, with the same bound.
  const one = indexAgentResponse(Buffer.from(answer(repeats(4))), 16, KEY, Number.MAX_SAFE_INTEGER, 3);
  assert.ok(!one.ok && one.reject instanceof MemoryKeyRepeats);
});
