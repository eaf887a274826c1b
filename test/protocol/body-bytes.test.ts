import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BodyBytes } from '../../src/protocol/body-bytes.js';

const body = Buffer.from(Array.from({ length: 5000 }, (_, i) => String.fromCharCode(32 + (i % 90))).join(''), 'latin1');
const pieces = (b: Buffer, n: number): Buffer[] => Array.from({ length: Math.ceil(b.length / n) }, (_, i) => b.subarray(i * n, (i + 1) * n));

describe('body bytes', () => {
  it('a declared length: the chunks copied into one Buffer of that size, bytes as sent', () => {
    const r = new BodyBytes(body.length);
    const chunks = pieces(body, 700);
    for (const c of chunks) r.add(c);
    assert.equal(r.size, body.length);
    const got = r.take();
    assert.deepEqual(got, body);
    assert.equal(got.buffer.byteLength >= body.length, true);
    // Memory of its own: no byte shared with a chunk. (Node 24 pools Buffers up to 32 KiB, so got and the chunks
    // may sit in one ArrayBuffer; the bytes they cover must not overlap.)
    const overlaps = (c: Buffer): boolean => c.buffer === got.buffer && c.byteOffset < got.byteOffset + got.length && got.byteOffset < c.byteOffset + c.length;
    assert.ok(!chunks.some(overlaps), 'a Buffer of its own, not a chunk');
  });

  it('a body in one chunk is that chunk, not a copy', () => {
    const r = new BodyBytes(body.length);
    r.add(body);
    assert.equal(r.take(), body);
  });

  it('without a declared length (chunked): the chunks joined at the end', () => {
    const r = new BodyBytes(undefined);
    for (const c of pieces(body, 333)) r.add(c);
    assert.deepEqual(r.take(), body);
  });

  it('more bytes than declared are kept too, in order', () => {
    const r = new BodyBytes(1000);
    for (const c of pieces(body, 600)) r.add(c);
    assert.deepEqual(r.take(), body);
  });

  it('an empty chunk is not kept: it may be a Buffer its sender shares', () => {
    const shared = Buffer.alloc(0);
    const r = new BodyBytes(undefined);
    r.add(body.subarray(0, 10));
    r.add(shared);
    r.add(body.subarray(10, 20));
    const got = r.received();
    assert.ok(Array.isArray(got));
    assert.equal(got.length, 2);
    assert.ok(!got.includes(shared));
    assert.deepEqual(Buffer.concat(got), body.subarray(0, 20));
  });

  it('dropped: nothing is kept, and a later take is empty', () => {
    const r = new BodyBytes(body.length);
    r.add(body.subarray(0, 100));
    r.drop();
    assert.equal(r.take().length, 0);
  });

  it('pieces: the bytes received so far, in order, with or without a declared length; nothing kept after', () => {
    for (const declared of [body.length, undefined]) {
      const r = new BodyBytes(declared);
      for (const c of pieces(body.subarray(0, 3000), 700)) r.add(c);
      assert.deepEqual(Buffer.concat(r.pieces()), body.subarray(0, 3000), `declared ${String(declared)}`);
      assert.equal(r.take().length, 0);
    }
  });
});
