/**
 * A batch's first step (src/batch/read-batch.ts): the body read by the indexer and held to the batch limits
 * before anything is routed; what ends the batch there is answered with its status and body.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readBatch } from '../../src/batch/read-batch.js';
import { configSchema } from '../../src/config/schema.js';
import type { Logger } from '../../src/logging.js';
import { oneBackend } from '../helpers/fixtures.js';

const server = configSchema.parse(oneBackend({ a: 'http://127.0.0.1:1' })).server;
const lines: string[] = [];
const log: Logger = { level: 'info', error: () => undefined, warn: () => undefined, info: (_o, msg) => void lines.push(msg ?? ''), debug: () => undefined };
const input = (id: number, n = 1): string => `{"id":${id},"instruction":{"type":"user","content":"go"},"num_outputs":${n}}`;

test('a valid batch is the request to route, its inputs in order', () => {
  const r = readBatch(Buffer.from(`{"request_id":"r","inputs":[${input(1)},${input(2)}]}`), server, '_gateway', log);
  assert.ok(r.ok);
  assert.deepEqual(r.request.inputs.map((i) => i.id), [1, 2]);
});

test('an empty batch is answered [] at once', () => {
  assert.deepEqual(readBatch(Buffer.from('{"request_id":"r","inputs":[]}'), server, '_gateway', log), { ok: false, status: 200, body: '[]' });
});

test('a body that is not UTF-8 is a 400 with the gateway code, logged', () => {
  const r = readBatch(Buffer.concat([Buffer.from('{"request_id":"'), Buffer.from([0xff]), Buffer.from('","inputs":[]}')]), server, '_gateway', log);
  assert.ok(!r.ok && r.status === 400);
  assert.equal((JSON.parse(r.body) as { code: string }).code, 'GATEWAY_ERR_BODY_ENCODING');
  assert.equal(lines.at(-1), 'request body is not UTF-8');
});

test('a batch over max_candidates_per_batch is a FastAPI-shaped 422 naming the limit', () => {
  const limited = { ...server, max_candidates_per_batch: 3 };
  const r = readBatch(Buffer.from(`{"request_id":"r","inputs":[${input(1, 2)},${input(2, 2)}]}`), limited, '_gateway', log);
  assert.ok(!r.ok && r.status === 422);
  const detail = (JSON.parse(r.body) as { detail: { msg: string }[] }).detail;
  assert.match(detail[0]?.msg ?? '', /max_candidates_per_batch/);
});
