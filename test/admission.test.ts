/**
 * Body-bytes admission (src/admission.ts): FIFO order, no overtaking, an oversized body admitted alone, a
 * waiter that leaves frees its place, and the wait reported by an injected clock.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission, type AdmissionHold } from '../src/admission.js';

function setup(limit: number): { a: Admission; order: string[]; waits: number[]; clock: { t: number } } {
  const order: string[] = [];
  const waits: number[] = [];
  const clock = { t: 0 };
  const a = new Admission(() => limit, (s) => waits.push(s), () => clock.t);
  return { a, order, waits, clock };
}

test('within the budget every batch is admitted at once, synchronously', () => {
  const { a, order } = setup(100);
  a.acquire(40, () => order.push('a'));
  a.acquire(60, () => order.push('b'));
  assert.deepEqual(order, ['a', 'b']);
  assert.deepEqual([a.bytesInFlight, a.waiting], [100, 0]);
});

test('over the budget batches wait and are admitted in arrival order; a small one never overtakes', () => {
  const { a, order, waits, clock } = setup(100);
  const first = a.acquire(90, () => order.push('first'));
  const big = a.acquire(50, () => order.push('big'));
  const small = a.acquire(5, () => order.push('small'));
  assert.deepEqual(order, ['first'], 'small (5 bytes, would fit) waits behind big');
  assert.deepEqual([a.bytesInFlight, a.waiting], [90, 2]);
  clock.t = 2500;
  first.release();
  assert.deepEqual(order, ['first', 'big', 'small']);
  assert.deepEqual(waits, [2.5, 2.5]);
  assert.deepEqual([a.bytesInFlight, a.waiting], [55, 0]);
  big.release();
  small.release();
  small.release(); // idempotent
  assert.equal(a.bytesInFlight, 0);
});

test('a body larger than the whole budget is admitted when nothing else is in flight', () => {
  const { a, order } = setup(100);
  a.acquire(500, () => order.push('huge-alone'));
  assert.deepEqual(order, ['huge-alone']);
  const { a: b, order: o2 } = setup(100);
  const other = b.acquire(10, () => o2.push('other'));
  b.acquire(500, () => o2.push('huge'));
  assert.deepEqual(o2, ['other']);
  other.release();
  assert.deepEqual(o2, ['other', 'huge']);
});

test('a waiter that leaves frees its place: the next one is admitted, the one that left never is', () => {
  const { a, order } = setup(100);
  const first = a.acquire(100, () => order.push('first'));
  const leaver = a.acquire(100, () => order.push('leaver'));
  a.acquire(100, () => order.push('third'));
  leaver.release();
  assert.equal(a.waiting, 1);
  first.release();
  assert.deepEqual(order, ['first', 'third']);
  assert.equal(a.bytesInFlight, 100);
});

test('grow counts bytes of an admitted body of unknown length; release gives them all back', () => {
  const { a, order } = setup(100);
  let held: AdmissionHold | undefined;
  a.acquire(0, (h) => (held = h));
  held!.grow(70);
  held!.grow(50);
  assert.equal(a.bytesInFlight, 120);
  const next = a.acquire(10, () => order.push('next'));
  assert.deepEqual(order, [], 'over the budget now: the next batch waits');
  held!.release();
  assert.deepEqual([order, a.bytesInFlight], [['next'], 10]);
  next.release();
  assert.equal(a.bytesInFlight, 0);
});

test('many waiters: FIFO across queue compaction', () => {
  const { a, order } = setup(1);
  const holds: AdmissionHold[] = [a.acquire(1, () => order.push('0'))];
  for (let i = 1; i < 3000; i++) holds.push(a.acquire(1, () => order.push(String(i))));
  for (let i = 0; i < 3000; i++) holds[i]!.release();
  assert.equal(order.length, 3000);
  assert.ok(order.every((x, i) => x === String(i)));
  assert.deepEqual([a.bytesInFlight, a.waiting], [0, 0]);
});
