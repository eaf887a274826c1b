import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnswerBody } from '../../src/protocol/answer/answer-body.js';
import { LocalReplay } from '../../src/state/replay.js';
import { emptyStats, type ReplayBegin } from '../../src/state/types.js';

const KB = 1024;

function replay(capBytes: number): { replay: LocalReplay; stats: ReturnType<typeof emptyStats> } {
  const stats = emptyStats();
  return { replay: new LocalReplay({ ttlMs: 60_000, maxBytes: 1024 * KB, capBytes }, stats), stats };
}

async function store(r: LocalReplay, rid: string, body: string | AnswerBody): Promise<void> {
  const first = await r.begin(rid, 'h');
  assert.equal(first.kind, 'compute');
  if (first.kind === 'compute') await first.lease.finish(body);
}

function bytesOf(begin: ReplayBegin): string {
  assert.equal(begin.kind, 'hit');
  if (begin.kind !== 'hit') return '';
  return typeof begin.body === 'string' ? begin.body : Buffer.concat(begin.body.parts as Buffer[]).toString('latin1');
}

describe('local replay', () => {
  it('keeps a larger answer as a copy of its own, never its pieces, and each hit is a copy of that', async () => {
    const { replay: r } = replay(1024 * KB);
    const backing = Buffer.alloc(64 * KB, 'm');
    const parts = [Buffer.from('[', 'latin1'), backing.subarray(0, 40 * KB), backing.subarray(40 * KB), Buffer.from(']', 'latin1')];
    await store(r, 'a', { parts, length: 64 * KB + 2 });
    backing.fill('x'); // the batch's memory, given back and written again
    const hit = await r.begin('a', 'h');
    assert.ok(hit.kind === 'hit' && typeof hit.body !== 'string', 'replayed as bytes, not decoded into a string');
    assert.equal(bytesOf(hit), `[${'m'.repeat(64 * KB)}]`);
    for (const p of hit.body.parts) p.fill('y'); // what a hit is given is its own: the entry is not written through it
    assert.equal(bytesOf(await r.begin('a', 'h')), `[${'m'.repeat(64 * KB)}]`);
  });

  it('counts a larger answer by its length, what its copy holds, however large the memory it was sliced from', async () => {
    // 80 KB answers, each two slices of its own 150 KB buffer: with 1 KB of bookkeeping each, three fit in 250 KB.
    const { replay: r, stats } = replay(250 * KB);
    for (const rid of ['a', 'b', 'c']) {
      const backing = Buffer.alloc(150 * KB, rid);
      await store(r, rid, { parts: [backing.subarray(0, 40 * KB), backing.subarray(40 * KB, 80 * KB)], length: 80 * KB });
    }
    assert.equal(stats.replayEvicted, 0);
    for (const rid of ['a', 'b', 'c']) assert.equal(bytesOf(await r.begin(rid, 'h')), rid.repeat(80 * KB));
    await store(r, 'd', { parts: [Buffer.alloc(80 * KB, 'd')], length: 80 * KB });
    assert.equal(stats.replayEvicted, 1, 'a fourth does not fit: the oldest goes');
    assert.equal((await r.begin('a', 'h')).kind, 'compute');
  });

  it('copies a small answer sliced from a large backing store instead of keeping the store', async () => {
    // Kept as its slice, a 10 KB answer of a 1 MB backend answer would count 1 MB and fill the cache alone.
    const { replay: r, stats } = replay(100 * KB);
    const backing = Buffer.alloc(1024 * KB, 'x');
    backing.write('answer', 500 * KB, 'latin1');
    const slice = backing.subarray(500 * KB, 510 * KB);
    for (const rid of ['a', 'b', 'c']) await store(r, rid, { parts: [slice], length: slice.length });
    assert.equal(stats.replayEvicted, 0);
    const hit = await r.begin('a', 'h');
    assert.ok(hit.kind === 'hit' && typeof hit.body !== 'string');
    assert.ok(hit.body.parts.every((p) => p.buffer !== backing.buffer), 'the large store is not kept');
    assert.equal(bytesOf(hit), slice.toString('latin1'));
  });

  it('a small answer comes back byte for byte, every byte value and invalid UTF-8 included, held apart from the pieces it came in', async () => {
    // Kept packed (one byte a character): no decoding may touch a byte, and no piece of the shared pool is pinned.
    const { replay: r } = replay(100 * KB);
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const parts = [Buffer.from('["', 'latin1'), all, Buffer.from([0xc3, 0x28, 0xf0, 0x9f, 0x98, 0x80]), Buffer.from('"]', 'latin1')];
    const length = parts.reduce((n, p) => n + p.length, 0);
    await store(r, 'a', { parts, length });
    all.fill(0); // the entry holds its own bytes, not the pieces it was given
    const hit = await r.begin('a', 'h');
    assert.ok(hit.kind === 'hit' && typeof hit.body !== 'string');
    assert.equal(hit.body.length, length);
    assert.deepEqual(Buffer.concat(hit.body.parts as Buffer[]), Buffer.concat([parts[0]!, Buffer.from(Array.from({ length: 256 }, (_, i) => i)), parts[2]!, parts[3]!]));
  });

  it("counts each stored answer's bookkeeping too: tiny answers cannot hold more entries than the bound pays for", async () => {
    // 20 answers of 10 bytes are 200 bytes; with about 1 KB per entry, a 10 KB bound keeps fewer than ten.
    const { replay: r, stats } = replay(10 * KB);
    for (let i = 0; i < 20; i++) await store(r, `r${i}`, '[{"a":123}]');
    assert.ok(stats.replayEvicted >= 10, `evicted ${stats.replayEvicted}`);
    assert.equal(bytesOf(await r.begin('r19', 'h')), '[{"a":123}]', 'the newest stays');
    assert.equal((await r.begin('r0', 'h')).kind, 'compute', 'the oldest went first');
  });

  it('does not store an answer that with its bookkeeping is larger than the whole cache, and keeps the others', async () => {
    const { replay: r, stats } = replay(4 * KB);
    await store(r, 'small', '[{"a":1}]');
    await store(r, 'large', `[${'x'.repeat(3500)}]`);
    assert.equal(stats.replayTooLarge, 1);
    assert.equal(stats.replayEvicted, 0);
    assert.equal(bytesOf(await r.begin('small', 'h')), '[{"a":1}]');
    assert.equal((await r.begin('large', 'h')).kind, 'compute');
  });
});
