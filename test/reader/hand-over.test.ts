/**
 * What the hand-over to the reader thread takes from its caller (reader/reader.ts): only a store the gateway
 * allocated for a body (protocol/byte-store.ts) goes to the thread, and it comes back usable; any other Buffer is
 * copied, so memory a library shares is never taken from it (undici's one empty Buffer, handed over once, broke
 * every connection's next read). A store released while its bytes are on the thread is given back when they return.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexAnswerOffloaded, OFFLOAD_BYTES, offloaded, readOffloaded } from '../../src/reader/reader.js';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import { BodyBytes } from '../../src/protocol/body-bytes.js';
import { storeOf, type ByteStore } from '../../src/protocol/byte-store.js';

const MB = 1024 * 1024;

/** A valid answer of one candidate whose output says `bytes` bytes of text: over 1 MiB, so worth the thread. */
function answer(bytes: number): Buffer {
  const cand = { request_id: 'r', source_id: 1, candidate_index: 0, status: 'completed', memory: {}, internal_steps: [], output: { say: 's'.repeat(bytes) }, error: null };
  return Buffer.from(JSON.stringify([cand]));
}

/** `bytes` received as a socket delivers them, into a store of `owned`. */
function received(bytes: Buffer, owned: ByteStore[]): Buffer {
  const b = new BodyBytes({ max: bytes.length, owner: { adopt: (s) => owned.push(s) } });
  for (let at = 0; at < bytes.length; at += 65_536) b.add(bytes.subarray(at, at + 65_536));
  return b.received();
}

test('a store the gateway made goes to the thread and comes back: the same store, the bytes in place, nothing copied', async () => {
  const bytes = answer(2 * MB);
  const owned: ByteStore[] = [];
  const body = received(bytes, owned);
  const before = { ...offloaded.answer };
  const r = await indexAnswerOffloaded(body, 1, 64, 'mk');
  assert.ok(r.outcome.ok, 'indexed as one valid answer');
  assert.equal(r.body.equals(bytes), true);
  assert.equal(offloaded.answer.copied - before.copied, 0);
  assert.equal(storeOf(r.body), owned[0], 'the bytes came back in their store');
  owned[0]?.release();
  assert.equal(r.body.length, 0, 'given back by its owner');
});

test('any other Buffer is copied: a slice of a larger one and a plain Buffer stay usable here', async () => {
  const bytes = answer(2 * MB);
  const larger = Buffer.concat([Buffer.from('xx'), bytes, Buffer.from('yy')]);
  const slice = larger.subarray(2, 2 + bytes.length);
  const before = { ...offloaded.answer };
  const r = await indexAnswerOffloaded(slice, 1, 64, 'mk');
  assert.ok(r.outcome.ok);
  assert.equal(offloaded.answer.copied - before.copied, 1);
  assert.equal(slice.equals(bytes), true, 'the caller keeps its bytes');
  assert.equal(larger.subarray(0, 2).toString(), 'xx');
});

test('a store released while its bytes are on the thread is given back when they return', async () => {
  const owned: ByteStore[] = [];
  const body = received(answer(2 * MB), owned);
  const job = indexAnswerOffloaded(body, 1, 64, 'mk');
  owned[0]?.release();
  const r = await job;
  assert.equal(r.body.length, 0, 'the pages went back as soon as they came back');
});

test('an integer no double holds, read on the thread, means the same number here (its marker is shared)', async () => {
  const id = '99999999999999999999';
  const memory = JSON.stringify({ note: 'm'.repeat(OFFLOAD_BYTES) });
  const body = Buffer.from(`{"request_id":"r","inputs":[{"id":${id},"instruction":{"type":"user","content":"c"},"memory":${memory}}]}`);
  const limits = { maxOutputsPerInput: 8, maxJsonDepth: 64, memoryKey: 'mk', maxInputs: 8, maxProblems: 8 };
  const before = offloaded.request.jobs;
  const r = await readOffloaded(body, limits);
  assert.equal(offloaded.request.jobs - before, 1, 'read on the thread');
  assert.ok(r.outcome.ok, JSON.stringify(r.outcome).slice(0, 300));
  if (r.outcome.ok) {
    const input = r.outcome.index.inputs[0];
    assert.ok(input !== undefined);
    assert.equal(stringifyExact(input.id), id);
  }
});
