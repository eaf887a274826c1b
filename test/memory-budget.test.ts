/**
 * The memory budget (src/memory/budget.ts): FIFO admission with no overtaking, an oversized request admitted
 * alone, a waiter that leaves frees its place, the wait and its timeout on an injected clock from arrival,
 * answers that pause over the budget unless their batch is the oldest, and shadows shed first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryBudget, type BudgetHold } from '../src/memory/budget.js';

const never = (): void => assert.fail('no request should time out here');

interface Setup {
  a: MemoryBudget;
  order: string[];
  waits: number[];
  clock: { t: number };
  timers: { fn: () => void; at: number }[];
  sheds: { n: number };
}

function setup(limit: number, timeoutMs = 60_000): Setup {
  const order: string[] = [];
  const waits: number[] = [];
  const clock = { t: 0 };
  const timers: { fn: () => void; at: number }[] = [];
  const sheds = { n: 0 };
  const a = new MemoryBudget({
    limit: () => limit,
    timeoutMs: () => timeoutMs,
    onWaited: (s) => waits.push(s),
    onShed: () => sheds.n++,
    now: () => clock.t,
    setTimer: (fn, ms) => {
      const t = { fn, at: clock.t + ms };
      timers.push(t);
      return t;
    },
    clearTimer: (t) => timers.splice(timers.indexOf(t as { fn: () => void; at: number }), 1), // what setTimer returned
  });
  return { a, order, waits, clock, timers, sheds };
}

/** Move the injected clock to `t`, running the timers due by then. */
function advance(s: Setup, t: number): void {
  s.clock.t = t;
  for (const timer of [...s.timers].filter((x) => x.at <= t)) {
    s.timers.splice(s.timers.indexOf(timer), 1);
    timer.fn();
  }
}

test('within the budget every batch is admitted at once, synchronously', () => {
  const { a, order } = setup(100);
  a.admit(40, () => order.push('a'), never);
  a.admit(60, () => order.push('b'), never);
  assert.deepEqual(order, ['a', 'b']);
  assert.deepEqual([a.bytesHeld, a.waiting], [100, 0]);
});

test('over the budget batches wait and are admitted in arrival order; a small one never overtakes', () => {
  const { a, order, waits, clock } = setup(100);
  const first = a.admit(90, () => order.push('first'), never);
  const big = a.admit(50, () => order.push('big'), never);
  const small = a.admit(5, () => order.push('small'), never);
  assert.deepEqual(order, ['first'], 'small (5 bytes, would fit) waits behind big');
  assert.deepEqual([a.bytesHeld, a.waiting], [90, 2]);
  clock.t = 2500;
  first.release();
  assert.deepEqual(order, ['first', 'big', 'small']);
  assert.deepEqual(waits, [2.5, 2.5]);
  assert.deepEqual([a.bytesHeld, a.waiting], [55, 0]);
  big.release();
  small.release();
  small.release(); // idempotent
  assert.equal(a.bytesHeld, 0);
});

test('a body larger than the whole budget is admitted when nothing else is in flight', () => {
  const { a, order } = setup(100);
  a.admit(500, () => order.push('huge-alone'), never);
  assert.deepEqual(order, ['huge-alone']);
  const { a: b, order: o2 } = setup(100);
  const other = b.admit(10, () => o2.push('other'), never);
  b.admit(500, () => o2.push('huge'), never);
  assert.deepEqual(o2, ['other']);
  other.release();
  assert.deepEqual(o2, ['other', 'huge']);
});

test('a waiter that leaves frees its place: the next one is admitted, the one that left never is', () => {
  const { a, order } = setup(100);
  const first = a.admit(100, () => order.push('first'), never);
  const leaver = a.admit(100, () => order.push('leaver'), never);
  a.admit(100, () => order.push('third'), never);
  leaver.release();
  assert.equal(a.waiting, 1);
  first.release();
  assert.deepEqual(order, ['first', 'third']);
  assert.equal(a.bytesHeld, 100);
});

test('grow counts bytes of an admitted body of unknown length; release gives them all back', () => {
  const { a, order } = setup(100);
  let held: BudgetHold | undefined;
  a.admit(0, (h) => (held = h), never);
  held!.grow(70);
  held!.grow(50);
  assert.equal(a.bytesHeld, 120);
  const next = a.admit(10, () => order.push('next'), never);
  assert.deepEqual(order, [], 'over the budget now: the next batch waits');
  held!.release();
  assert.deepEqual([order, a.bytesHeld], [['next'], 10]);
  next.release();
  assert.equal(a.bytesHeld, 0);
});

test('many waiters: FIFO across queue compaction', () => {
  const { a, order } = setup(1);
  const holds: BudgetHold[] = [a.admit(1, () => order.push('0'), never)];
  for (let i = 1; i < 3000; i++) holds.push(a.admit(1, () => order.push(String(i)), never));
  for (let i = 0; i < 3000; i++) holds[i]!.release();
  assert.equal(order.length, 3000);
  assert.ok(order.every((x, i) => x === String(i)));
  assert.deepEqual([a.bytesHeld, a.waiting], [0, 0]);
});


test('a request waits at most admission_timeout_s from its arrival, then times out and leaves the queue', () => {
  const s = setup(100, 5000);
  const timedOut: string[] = [];
  s.a.admit(100, () => s.order.push('first'), never);
  // Arrived at 0 (its headers), asked at 2000 (its first body byte): its clock started at 0.
  s.clock.t = 2000;
  s.a.admit(50, () => s.order.push('late'), () => timedOut.push('late'), 0);
  s.a.admit(50, () => s.order.push('later'), () => timedOut.push('later'), 2000);
  advance(s, 4999);
  assert.deepEqual(timedOut, []);
  advance(s, 5000);
  assert.deepEqual(timedOut, ['late']);
  assert.equal(s.a.waiting, 1);
  advance(s, 7000);
  assert.deepEqual(timedOut, ['late', 'later']);
  assert.deepEqual([s.a.waiting, s.a.bytesHeld, s.timers.length], [0, 100, 0]);
});

test('an admitted request clears its timer; its wait is reported from arrival', () => {
  const s = setup(100, 5000);
  const first = s.a.admit(100, () => s.order.push('first'), never);
  s.clock.t = 1000;
  s.a.admit(10, () => s.order.push('second'), never, 500);
  s.clock.t = 3000;
  first.release();
  assert.deepEqual(s.order, ['first', 'second']);
  assert.deepEqual(s.waits, [2.5]);
  assert.equal(s.timers.length, 0);
});

test('over the budget an answer pauses unless its batch is the oldest held; room resumes it', () => {
  const s = setup(100);
  let oldest: BudgetHold | undefined;
  let younger: BudgetHold | undefined;
  s.a.admit(10, (h) => (oldest = h), never);
  s.a.admit(10, (h) => (younger = h), never);
  assert.ok(oldest && younger);
  assert.equal(younger.charge(70), true, 'within the budget: read on');
  assert.equal(younger.charge(20), false, 'over it (110 > 100): the younger batch pauses');
  assert.equal(oldest.charge(50), true, 'the oldest batch always reads on: it is what frees room');
  const resumed: string[] = [];
  younger.whenRoom(() => resumed.push('younger'));
  oldest.shrink(50);
  assert.deepEqual(resumed, ['younger']);
  oldest.release();
  assert.equal(s.a.bytesHeld, 100);
  assert.equal(younger.charge(1), true, 'now the oldest itself');
  younger.release();
  assert.equal(s.a.bytesHeld, 0);
});

test('shadows: held only while there is room, and shed first when a request must wait or an answer is over', () => {
  const s = setup(100);
  const shed: string[] = [];
  const shadow = s.a.tryHold(10, () => shed.push('shadow'));
  assert.ok(shadow);
  assert.equal(shadow.charge(40), true);
  let batch: BudgetHold | undefined;
  s.a.admit(40, (h) => (batch = h), never);
  assert.ok(batch);
  assert.equal(s.a.bytesHeld, 90);
  assert.equal(s.a.tryHold(20, () => shed.push('no room')), undefined, 'no room for a second one');
  assert.equal(s.sheds.n, 1);
  // The batch's answer goes over: the shadow is dropped, and that is room enough.
  assert.equal(batch.charge(30), true);
  assert.deepEqual(shed, ['shadow']);
  assert.equal(s.sheds.n, 2);
  assert.equal(s.a.bytesHeld, 70);
  const second = s.a.tryHold(0, () => shed.push('second'));
  assert.ok(second);
  assert.equal(second.charge(40), false, 'a shadow over the budget is shed, never paused');
  assert.deepEqual(shed, ['shadow', 'second']);
  assert.equal(s.a.bytesHeld, 70);
  const third = s.a.tryHold(0, () => shed.push('third'));
  assert.equal(third?.charge(25), true);
  s.a.admit(20, () => s.order.push('fits once the shadow is gone'), never);
  assert.deepEqual(shed, ['shadow', 'second', 'third'], 'a request that would wait sheds every shadow first');
  assert.deepEqual(s.order, ['fits once the shadow is gone'], 'and is admitted at once when that made the room');
  s.a.admit(50, () => s.order.push('waits'), never);
  batch.release();
  assert.deepEqual(s.order, ['fits once the shadow is gone', 'waits']);
});

test('a copy for a store takes room only when there is some now and nobody waits; it is never shed, and its release lets a waiter in', () => {
  const s = setup(100);
  let batch: BudgetHold | undefined;
  s.a.admit(60, (h) => (batch = h), never);
  assert.ok(batch);
  const copy = s.a.reserve(30);
  assert.ok(copy);
  assert.equal(s.a.bytesHeld, 90);
  assert.equal(s.a.reserve(20), undefined, 'no room: the copy is not made');
  assert.equal(s.sheds.n, 0, 'a refused copy is no shed shadow');
  s.a.admit(30, () => s.order.push('waiter'), never);
  assert.equal(s.a.waiting, 1);
  assert.equal(s.a.reserve(0), undefined, 'a waiting request goes first, even for an empty copy');
  // A request that waits sheds shadows, never a copy: the copy is the store's until it has it.
  assert.equal(s.a.bytesHeld, 90);
  copy.release();
  assert.deepEqual(s.order, ['waiter']);
  assert.equal(s.a.bytesHeld, 90);
  copy.release();
  assert.equal(s.a.bytesHeld, 90, 'release is idempotent');
});

test('shadows together hold at most their share of the budget: one that would pass it is shed, or not started', () => {
  const shed: string[] = [];
  const a = new MemoryBudget({ limit: () => 100, timeoutMs: () => 1000, shadowShare: () => 0.25, onShed: () => shed.push('counted') });
  const one = a.tryHold(10, () => shed.push('one'));
  const two = a.tryHold(10, () => shed.push('two'));
  assert.ok(one && two);
  assert.equal(a.tryHold(10, () => shed.push('three')), undefined, '30 > 25: not started');
  assert.equal(one.charge(5), true, '25: at the share, read on');
  assert.equal(two.charge(1), false, '26: past it, shed rather than paused');
  assert.deepEqual(shed, ['counted', 'counted', 'two']);
  assert.equal(a.bytesHeld, 15, 'the shed shadow gave its bytes back');
  let batch: BudgetHold | undefined;
  a.admit(80, (h) => (batch = h), never);
  assert.ok(batch, 'a batch still has the rest of the budget');
  assert.equal(batch.charge(5), true);
});
