/**
 * Collections for what the memory budget gave back (src/memory/reclaim.ts, docs/memory-budget.md#reclaim):
 * a full collection once a share of the budget was released since the last one, or a quarter of it when the
 * budget empties,
 * never inside the release itself, and none with a share of 0. The budget reports every byte it gives back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryBudget, type BudgetHold } from '../../src/memory/budget.js';
import { Reclaim } from '../../src/memory/reclaim.js';

const MB = 1024 * 1024;

/** `arrayBuffers`: the process's ArrayBuffer bytes as the reclaim reads them (default: all of them garbage). */
function setup(share: number, arrayBuffers = { n: 10_000 * MB }): { r: Reclaim; collected: { n: number }; queued: (() => void)[] } {
  const collected = { n: 0 };
  const queued: (() => void)[] = [];
  const r = new Reclaim({
    limit: () => 400 * MB, share: () => share, collect: () => collected.n++, later: (fn) => queued.push(fn), arrayBufferBytes: () => arrayBuffers.n,
  });
  return { r, collected, queued };
}

test('a quarter of the budget given back while batches still hold: one collection, on a later task', () => {
  const { r, collected, queued } = setup(0.25);
  r.released(50 * MB, 300 * MB);
  assert.equal(queued.length, 0, 'under the share: nothing scheduled');
  r.released(50 * MB, 250 * MB);
  assert.equal(queued.length, 1);
  assert.equal(collected.n, 0, 'not inside the release');
  r.released(10 * MB, 240 * MB);
  assert.equal(queued.length, 1, 'one collection scheduled at a time');
  queued.shift()?.();
  assert.equal(collected.n, 1);
  r.released(10 * MB, 230 * MB);
  assert.equal(queued.length, 0, 'the count starts again after a collection');
});

test('the budget emptying: a quarter of the share given back is enough, less is not (small batches); a share of 0 never', () => {
  const a = setup(0.25);
  a.r.released(1 * MB, 0);
  assert.equal(a.queued.length, 0, 'one small batch answered: no collection');
  a.r.released(24 * MB, 0);
  assert.equal(a.queued.length, 1, '25 MB = a quarter of 100 MB (0.25 of 400 MB)');
  a.queued.shift()?.();
  assert.equal(a.collected.n, 1);
  const off = setup(0);
  off.r.released(400 * MB, 0);
  assert.equal(off.queued.length, 0);
});

test('a collection V8 has already done is not forced again: skipped while what it would free is under the share, run once it is not', () => {
  const arrayBuffers = { n: 0 };
  const { r, collected, queued } = setup(0.25, arrayBuffers);
  // 100 MB given back while 250 MB are held, but the process's ArrayBuffers are 260 MB: V8 freed the rest.
  r.released(100 * MB, 250 * MB);
  arrayBuffers.n = 260 * MB;
  queued.shift()?.();
  assert.equal(collected.n, 0, 'nothing worth a pause: not run');
  assert.equal(r.skipped, 1);
  // The 10 MB of garbage left still count: 90 MB more given back, and this time it is there.
  r.released(80 * MB, 170 * MB);
  assert.equal(queued.length, 0, '90 MB: under the share');
  r.released(10 * MB, 160 * MB);
  assert.equal(queued.length, 1);
  arrayBuffers.n = 160 * MB + 100 * MB;
  queued.shift()?.();
  assert.equal(collected.n, 1);
  // The budget empty: what is left is exact, and a quarter of the share of it is collected.
  r.released(160 * MB, 0);
  arrayBuffers.n = 30 * MB;
  queued.shift()?.();
  assert.equal(collected.n, 2);
});

test('what the budget holds is read when the collection\'s turn comes: batches admitted since the release are not garbage', () => {
  const collected = { n: 0 };
  const queued: (() => void)[] = [];
  const held = { n: 200 * MB };
  const r = new Reclaim({
    limit: () => 400 * MB, share: () => 0.25, collect: () => collected.n++, later: (fn) => queued.push(fn),
    arrayBufferBytes: () => 350 * MB, held: () => held.n,
  });
  r.released(100 * MB, 200 * MB);
  // Two 60 MB bodies admitted and received meanwhile: of the 350 MB, 30 MB would be freed, not 150 MB.
  held.n = 320 * MB;
  queued.shift()?.();
  assert.equal(collected.n, 0);
  assert.equal(r.skipped, 1);
});

test('the budget reports each release and shrink with what it still counts', () => {
  const freed: [number, number][] = [];
  const b = new MemoryBudget({ limit: () => 100, timeoutMs: () => 1000, onFreed: (bytes, after) => freed.push([bytes, after]) });
  const one = b.admit(40, () => undefined, () => assert.fail('no timeout'));
  const two = b.admit(30, () => undefined, () => assert.fail('no timeout'));
  one.shrink(10);
  one.release();
  two.charge(5);
  two.release();
  assert.deepEqual(freed, [[10, 60], [30, 30], [35, 0]]);
});

/** A budget of 400 MB wired to a reclaim as the gateway wires them; collections and later tasks run when the test says. */
function wired(arrayBuffers: { n: number }, collector = true): { b: MemoryBudget; r: Reclaim; collected: { n: number }; queued: (() => void)[] } {
  const collected = { n: 0 };
  const queued: (() => void)[] = [];
  const ref: { b?: MemoryBudget } = {};
  const r = new Reclaim({
    limit: () => 400 * MB, share: () => 0.25, ...(collector ? { collect: () => void collected.n++ } : {}), later: (fn) => queued.push(fn),
    arrayBufferBytes: () => arrayBuffers.n, held: () => ref.b?.bytesHeld ?? 0, onCollected: () => ref.b?.collected(),
  });
  const b = new MemoryBudget({
    limit: () => 400 * MB, timeoutMs: () => 60_000, onFreed: (bytes, after) => r.released(bytes, after), uncollected: () => r.uncollected,
    setTimer: () => undefined, clearTimer: () => undefined,
  });
  ref.b = b;
  return { b, r, collected, queued };
}

/** Batches of 200, 150 and 100 MB asking in turn: the third waits (450 MB of 400); `admitted` lists who got in. */
function threeBatches(b: MemoryBudget): { admitted: string[]; one: BudgetHold; three: BudgetHold } {
  const admitted: string[] = [];
  const ask = (name: string, mb: number): BudgetHold => b.admit(mb * MB, () => admitted.push(name), () => assert.fail('no timeout'));
  const one = ask('one', 200);
  ask('two', 150);
  const three = ask('three', 100);
  return { admitted, one, three };
}

test('bytes given back count against the budget until collected: a request that fits only without them waits for the collection, which admits it', () => {
  const arrayBuffers = { n: 0 };
  const { b, r, collected, queued } = wired(arrayBuffers, true);
  const { admitted, one, three } = threeBatches(b);
  assert.deepEqual(admitted, ['one', 'two'], 'the third waits: 450 MB asked of 400');
  // The first batch answered: 200 MB given back, but its Buffers are still there until a collection.
  arrayBuffers.n = 350 * MB;
  one.release();
  assert.equal(r.uncollected, 200 * MB);
  assert.deepEqual(admitted, ['one', 'two'], '150 held + 200 uncollected + 100 asked is over the budget');
  assert.equal(queued.length, 1, 'a collection is due (200 MB over the 100 MB share)');
  queued.shift()?.();
  assert.equal(collected.n, 1);
  assert.equal(r.uncollected, 0);
  assert.deepEqual(admitted, ['one', 'two', 'three'], 'the collection made the room');
  three.release();
});

test('V8 found to have collected them already: the count goes down without a forced collection, and the waiting request goes in', () => {
  const arrayBuffers = { n: 0 };
  const { b, r, collected, queued } = wired(arrayBuffers, true);
  const { admitted, one } = threeBatches(b);
  one.release();
  // By the collection's turn V8 has freed all but 20 MB of them on its own.
  arrayBuffers.n = 170 * MB;
  queued.shift()?.();
  assert.equal(collected.n, 0, 'no collection forced');
  assert.equal(r.uncollected, 20 * MB);
  assert.deepEqual(admitted, ['one', 'two', 'three'], '150 + 20 + 100 fits');
});

test('without a collector (node started without --expose-gc) bytes given back are room at once', () => {
  const { b, r, queued } = wired({ n: 10_000 * MB }, false);
  const { admitted, one } = threeBatches(b);
  one.release();
  assert.equal(r.uncollected, 0);
  assert.equal(queued.length, 0);
  assert.deepEqual(admitted, ['one', 'two', 'three']);
});

test('an answer paused on uncollected bytes reads on after the collection; the oldest batch never pauses for them', () => {
  const arrayBuffers = { n: 10_000 * MB };
  const { b, queued } = wired(arrayBuffers, true);
  const one = b.admit(150 * MB, () => undefined, () => assert.fail('no timeout'));
  const two = b.admit(100 * MB, () => undefined, () => assert.fail('no timeout'));
  const three = b.admit(100 * MB, () => undefined, () => assert.fail('no timeout'));
  one.release(); // 150 MB uncollected: 200 held + 150 = 350
  assert.equal(two.charge(40 * MB), true, 'the oldest reads on (390 counted)');
  assert.equal(three.charge(20 * MB), false, '410 counted: a younger answer pauses');
  let resumed = false;
  three.whenRoom(() => (resumed = true));
  queued.shift()?.();
  assert.equal(resumed, true, 'the collection let it read on');
});
