import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BodyBytes, GATHER_BYTES, LARGE_BODY_BYTES } from '../../src/protocol/body-bytes.js';
import { isOwn, PooledCopy, REUSE_MAX_BYTES, storeOf, type ByteStore } from '../../src/protocol/byte-store.js';

const body = Buffer.from(Array.from({ length: 5000 }, (_, i) => String.fromCharCode(32 + (i % 90))).join(''), 'latin1');
const pieces = (b: Buffer, n: number): Buffer[] => Array.from({ length: Math.ceil(b.length / n) }, (_, i) => b.subarray(i * n, (i + 1) * n));
const large = Buffer.alloc(REUSE_MAX_BYTES + 17, 'x');
large.write('head', 0);
large.write('tail', large.length - 4);

/** An owner as a memory-budget hold is one: it keeps the stores it adopts and gives them back when told. */
class Owner {
  readonly stores: ByteStore[] = [];
  adopt(s: ByteStore): void {
    this.stores.push(s);
  }
  release(): void {
    for (const s of this.stores) s.release();
  }
}

describe('body bytes', () => {
  it('a small declared length: the chunks copied into one Buffer of that size, bytes as sent', () => {
    const r = new BodyBytes({ declared: body.length });
    const chunks = pieces(body, 700);
    for (const c of chunks) r.add(c);
    assert.equal(r.size, body.length);
    const got = r.received();
    assert.deepEqual(got, body);
    // Memory of its own: no byte shared with a chunk (node may pool small Buffers in one ArrayBuffer).
    const overlaps = (c: Buffer): boolean => c.buffer === got.buffer && c.byteOffset < got.byteOffset + got.length && got.byteOffset < c.byteOffset + c.length;
    assert.ok(!chunks.some(overlaps), 'a Buffer of its own, not a chunk');
    assert.equal(storeOf(got), undefined, 'a small body is not in a store');
    assert.equal(isOwn(got), true, 'memory of its own, whole: the reader thread may take it');
  });

  it('past 1 MiB, declared or chunked: a store; given back under REUSE_MAX_BYTES, its memory serves the next body, never its views', () => {
    const first = Buffer.alloc(LARGE_BODY_BYTES * 2, 'm');
    const next = Buffer.alloc(first.length - 1000, 'n');
    const owner = new Owner();
    const declared = new BodyBytes({ declared: first.length, owner });
    for (const c of pieces(first, 65_536)) declared.add(c);
    const got = declared.received();
    assert.equal(got.equals(first), true);
    assert.ok(storeOf(got) !== undefined, 'a declared length past 1 MiB: a store');
    owner.release();
    assert.equal(got.length, 0, 'given back: its views are empty');
    // Memory made for this body would be its length: a longer one is the first body's, given back.
    const again = new BodyBytes({ declared: next.length, max: next.length, owner: new Owner() });
    for (const c of pieces(next, 65_536)) again.add(c);
    const bytes = again.received();
    assert.equal(bytes.equals(next), true);
    assert.equal(bytes.buffer.byteLength, first.length, 'the memory given back served again');
    assert.equal(got.length, 0, 'the first body\'s views stay empty: they never see the next one');
    const chunked = new BodyBytes({ max: next.length });
    for (const c of pieces(next, 65_536)) chunked.add(c);
    assert.ok(storeOf(chunked.received()) !== undefined, 'chunked past 1 MiB: a store');
  });

  it('a pooled copy (replay): bytes as given, copied out; given back, its memory serves the next body', () => {
    const parts = [Buffer.alloc(LARGE_BODY_BYTES, 'a'), Buffer.from('middle'), Buffer.alloc(LARGE_BODY_BYTES, 'z')];
    const whole = Buffer.concat(parts);
    const kept = new PooledCopy(parts, whole.length);
    parts[0]!.fill('q'); // the batch's memory, written over after the copy
    const out = kept.copy();
    assert.equal(out.equals(whole), true);
    out.fill(0);
    assert.equal(kept.copy().equals(whole), true, 'a copy out is its own: writing it changes nothing kept');
    kept.release();
    assert.equal(kept.copy().length, 0, 'given back: nothing more to copy');
    // Memory made for this body would be its length: a longer one is the copy's, given back.
    const next = Buffer.alloc(whole.length - 1000, 'n');
    const again = new BodyBytes({ declared: next.length, max: next.length, owner: new Owner() });
    for (const c of pieces(next, 65_536)) again.add(c);
    const bytes = again.received();
    assert.equal(bytes.equals(next), true);
    assert.equal(bytes.buffer.byteLength, whole.length, 'the memory given back served again');
  });

  it('more than a declared length past 1 MiB (never sent by node or undici) is kept too, in order', () => {
    // Past four times the declared length: more than any memory given back that a body of this length may take.
    const sent = Buffer.alloc(7 * LARGE_BODY_BYTES);
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 31 + (i >> 9)) & 0xff;
    const r = new BodyBytes({ declared: 1.5 * LARGE_BODY_BYTES, max: sent.length });
    for (const c of pieces(sent, 65_536)) r.add(c);
    const got = r.received();
    assert.ok(storeOf(got) !== undefined);
    assert.equal(got.equals(sent), true);
  });

  it('a small body in one chunk is that chunk, not a copy', () => {
    const r = new BodyBytes({ declared: body.length });
    r.add(body);
    assert.equal(r.received(), body);
  });

  it('small and chunked: joined at the end; more than declared is kept too, in order', () => {
    const r = new BodyBytes();
    for (const c of pieces(body, 333)) r.add(c);
    assert.deepEqual(r.received(), body);
    const more = new BodyBytes({ declared: 1000 });
    for (const c of pieces(body, 600)) more.add(c);
    assert.deepEqual(more.received(), body);
  });

  for (const declared of [large.length, undefined]) {
    it(`a large body (${declared === undefined ? 'chunked' : 'declared'}) goes into a store its owner gives back: bytes as sent, then empty`, () => {
      const owner = new Owner();
      const r = new BodyBytes({ declared, max: large.length, owner });
      for (const c of pieces(large, 65_536)) r.add(c);
      const got = r.received();
      assert.equal(got.equals(large), true);
      const store = storeOf(got);
      assert.ok(store !== undefined, 'the bytes are a view of a store');
      assert.deepEqual(owner.stores, [store], 'adopted by its owner');
      owner.release();
      assert.equal(got.length, 0, 'the pages went back: the view is empty');
    });
  }

  it('1-byte chunks are gathered: a bounded number of pieces, bytes as sent', () => {
    const sent = Buffer.alloc(LARGE_BODY_BYTES - 1);
    for (let i = 0; i < sent.length; i++) sent[i] = (i * 7 + (i >> 11)) & 0xff;
    const source = Buffer.from(sent);
    for (const declared of [undefined, 10]) {
      const r = new BodyBytes({ declared });
      for (let i = 0; i < source.length; i++) r.add(source.subarray(i, i + 1));
      // Kept as they came, they were a million pieces; gathered, one per GATHER_BYTES and a pending run.
      assert.ok(r.pieces <= sent.length / GATHER_BYTES + 1025, `${r.pieces} pieces`);
      assert.equal(r.size, sent.length);
      const got = r.received();
      assert.equal(got.equals(sent), true);
      assert.equal(r.pieces, 0);
    }
  });

  it('small chunks between large ones, and past 1 MiB into a store: bytes as sent, in order', () => {
    const sizes = [1, 3, GATHER_BYTES, 1, 1, 2 * GATHER_BYTES + 5, 700, 9000, 9000, 1, GATHER_BYTES - 1];
    const parts: Buffer[] = [];
    for (let n = 0; n < 3000; n++) parts.push(...sizes.map((s, i) => Buffer.alloc(s, (n * 31 + i) & 0xff)));
    const all = Buffer.concat(parts);
    const small = new BodyBytes();
    let at = 0;
    for (const p of parts) {
      small.add(p);
      at += p.length;
      if (at > LARGE_BODY_BYTES / 2) break;
    }
    assert.equal(small.received().equals(all.subarray(0, at)), true);
    const owner = new Owner();
    const stored = new BodyBytes({ max: all.length, owner });
    for (let i = 0; i < LARGE_BODY_BYTES + 10; i++) stored.add(all.subarray(i, i + 1));
    for (const p of pieces(all.subarray(LARGE_BODY_BYTES + 10), 65_536)) stored.add(p);
    const got = stored.received();
    assert.ok(storeOf(got) !== undefined, 'past 1 MiB: a store');
    assert.equal(got.equals(all), true);
    owner.release();
  });

  it('an empty chunk is not kept: it may be a Buffer its sender shares', () => {
    const r = new BodyBytes();
    r.add(body.subarray(0, 10));
    r.add(Buffer.alloc(0));
    r.add(body.subarray(10, 20));
    assert.deepEqual(r.received(), body.subarray(0, 20));
  });

  it('dropped: nothing is kept, a store is given back at once', () => {
    const r = new BodyBytes({ declared: body.length });
    r.add(body.subarray(0, 100));
    r.drop();
    assert.equal(r.received().length, 0);
    const owner = new Owner();
    const big = new BodyBytes({ declared: large.length, owner });
    big.add(large.subarray(0, 100));
    const view = owner.stores[0]?.bytes();
    big.drop();
    assert.equal(view?.length, 0);
  });
});
