/**
 * What the hand-over to the reader thread takes from its caller (memory/offload.ts): the store of a piece that
 * alone spans it goes to the thread (and is unusable here after), anything else is copied, so a Buffer the
 * caller's libraries still use is never taken from them. The case that broke connections: undici delivers an
 * empty body chunk as a view of the one empty Buffer all its connections share; handed over, that Buffer was
 * detached and every connection's next read threw.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexAnswerOffloaded, offloaded } from '../../src/memory/offload.js';

const MB = 1024 * 1024;

/** A valid answer of one candidate whose output says `bytes` bytes of text: over 1 MiB, so worth the thread. */
function answer(bytes: number): Buffer {
  const cand = { request_id: 'r', source_id: 1, candidate_index: 0, status: 'completed', memory: {}, internal_steps: [], output: { say: 's'.repeat(bytes) }, error: null };
  return Buffer.from(JSON.stringify([cand]));
}

/** A copy of `b` in a store of its own (allocUnsafeSlow: never a slice of node's pool, whose size differs by version). */
function own(b: Buffer): Buffer {
  const out = Buffer.allocUnsafeSlow(b.length);
  b.copy(out);
  return out;
}

/** True when `store` was taken (detached): a view over it can no longer be made. */
function taken(store: ArrayBufferLike): boolean {
  try {
    new Uint8Array(store);
    return false;
  } catch {
    return true;
  }
}

test('the hand-over takes only stores a piece alone spans: an empty shared Buffer, a slice and a repeated store stay usable, the bytes arrive in order', async () => {
  const bytes = answer(2 * MB);
  const sharedEmpty = Buffer.alloc(0);
  // Pieces as a socket's reader leaves them: an owned store, a slice of a larger store, the shared empty Buffer
  // between them, and the rest as stores of their own.
  const head = own(bytes.subarray(0, 10_000));
  const larger = Buffer.alloc(15_000);
  bytes.copy(larger, 100, 10_000, 13_000);
  const slice = larger.subarray(100, 3100);
  const tail = own(bytes.subarray(13_000));
  const before = { ...offloaded.answer };
  const { body, outcome } = await indexAnswerOffloaded([head, sharedEmpty, slice, tail], 1, 64, 'mk');
  assert.ok(outcome.ok, 'indexed as one valid answer');
  assert.deepEqual(body, bytes, 'the pieces joined in order');
  assert.equal(offloaded.answer.jobs - before.jobs, 1);
  assert.equal(offloaded.answer.pieces - before.pieces, 4);
  assert.equal(offloaded.answer.copied - before.copied, 2, 'the empty piece and the slice copied');
  assert.equal(taken(sharedEmpty.buffer), false, 'the shared empty Buffer is still usable');
  assert.equal(taken(larger.buffer), false, 'the store a slice came from is still usable');
  assert.equal(larger.subarray(100, 3100).equals(bytes.subarray(10_000, 13_000)), true);
  assert.equal(taken(head.buffer), true, 'an owned store went to the thread');
  assert.equal(taken(tail.buffer), true);
});

test('the same store listed twice is handed over once and copied the second time', async () => {
  const bytes = answer(2 * MB);
  const half = Math.floor(bytes.length / 2);
  const first = own(bytes.subarray(0, half));
  const second = own(bytes.subarray(half));
  const before = { ...offloaded.answer };
  // `second` twice would not be an answer; the join must still hold both copies, in order.
  const { body } = await indexAnswerOffloaded([first, second, second], 1, 64, 'mk');
  assert.deepEqual(body, Buffer.concat([bytes, bytes.subarray(half)]));
  assert.equal(offloaded.answer.copied - before.copied, 1);
});
