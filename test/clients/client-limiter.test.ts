/**
 * One client's limits (docs/operations.md#client-keys): batches in flight in FIFO order, a continuously refilled bucket
 * of candidates per minute, a batch bigger than the bucket served into debt, waits bounded and cancellable.
 * Time is a stepped clock: nothing sleeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BatchSignal } from '../../src/abort.js';
import { ClientLimiter, type Admission, type Granted, type LimitName, type LimiterEvents } from '../../src/clients/client-limiter.js';
import { StepClock } from '../helpers/step-clock.js';

/** Admissions as they settle: a promise's outcome read without awaiting, after microtasks run. */
function track(a: Admission | Promise<Admission>): { result(): Admission | undefined } {
  // A method, not a property: an assertion on a property would narrow it for the rest of the test.
  let result: Admission | undefined;
  if (a instanceof Promise) void a.then((r) => (result = r));
  else result = a;
  return { result: () => result };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function granted(a: Admission | undefined): Granted {
  assert.ok(a?.ok === true, `expected a grant, got ${JSON.stringify(a)}`);
  return a;
}

function recorder(): LimiterEvents & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    waited: (l: LimitName) => log.push(`waited ${l}`),
    waitEnded: (ms: number, served: boolean) => log.push(`ended ${ms} ${served ? 'served' : 'refused'}`),
    refused: (l: LimitName) => log.push(`refused ${l}`),
  };
}

test('within the limits a batch is admitted at once, without waiting', () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 2, perMinute: 100 }, clock);
  const a = l.acquire(10, 1000);
  assert.ok(!(a instanceof Promise));
  assert.equal(granted(a).waitedMs, 0);
  assert.equal(l.inFlight, 1);
  assert.equal(l.availableTokens(), 90);
});

test('over max_batches_in_flight a batch waits in order and gets the slot a finished batch gives back', async () => {
  const clock = new StepClock();
  const events = recorder();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock, events);
  const first = granted(track(l.acquire(1, 10_000)).result());
  const second = track(l.acquire(1, 10_000));
  const third = track(l.acquire(1, 10_000));
  await settle();
  assert.equal(second.result(), undefined);
  assert.equal(l.waiting, 2);
  clock.advance(400);
  first.release();
  await settle();
  const g2 = granted(second.result());
  assert.equal(g2.waitedMs, 400);
  assert.equal(g2.waitedFor, 'batches_in_flight');
  assert.equal(third.result(), undefined, 'the third still waits: one slot');
  g2.release();
  await settle();
  granted(third.result()).release();
  assert.equal(l.inFlight, 0);
  assert.deepEqual(events.log, [
    'waited batches_in_flight',
    'waited batches_in_flight',
    'ended 400 served',
    'ended 400 served',
  ]);
});

test('a release is counted once, however often it is called', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock);
  const g = granted(track(l.acquire(1, 1000)).result());
  g.release();
  g.release();
  assert.equal(l.inFlight, 0);
  const a = granted(track(l.acquire(1, 1000)).result());
  const b = track(l.acquire(1, 1000));
  await settle();
  assert.equal(b.result(), undefined, 'the double release did not free a second slot');
  a.release();
});

test('a batch still over the limit when max_wait runs out is refused, naming the limit', async () => {
  const clock = new StepClock();
  const events = recorder();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock, events);
  granted(track(l.acquire(1, 1000)).result());
  const waiting = track(l.acquire(1, 5000));
  clock.advance(4999);
  await settle();
  assert.equal(waiting.result(), undefined);
  clock.advance(1);
  await settle();
  assert.deepEqual(waiting.result(), { ok: false, limit: 'batches_in_flight', waitedMs: 5000, cancelled: false });
  assert.equal(l.waiting, 0);
  assert.deepEqual(events.log.slice(1), ['ended 5000 refused', 'refused batches_in_flight']);
});

test('with no time to wait an over-limit batch is refused at once', () => {
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, new StepClock());
  granted(track(l.acquire(1, 1000)).result());
  assert.deepEqual(l.acquire(1, 0), { ok: false, limit: 'batches_in_flight', waitedMs: 0, cancelled: false });
});

test('a client that leaves while waiting leaves the queue, cancelled, and is not counted as refused', async () => {
  const clock = new StepClock();
  const events = recorder();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock, events);
  const first = granted(track(l.acquire(1, 1000)).result());
  const signal = new BatchSignal();
  const gone = track(l.acquire(1, 60_000, signal));
  const next = track(l.acquire(1, 60_000));
  clock.advance(250);
  signal.abort();
  await settle();
  assert.deepEqual(gone.result(), { ok: false, limit: 'batches_in_flight', waitedMs: 250, cancelled: true });
  assert.equal(l.waiting, 1);
  first.release();
  await settle();
  granted(next.result());
  assert.ok(!events.log.some((e) => e.startsWith('refused')), events.log.join('; '));
  assert.equal(clock.pending, 0, 'no timer is left behind');
});

test('an already aborted signal is refused at once as cancelled', () => {
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, new StepClock());
  granted(track(l.acquire(1, 1000)).result());
  const signal = new BatchSignal();
  signal.abort();
  assert.deepEqual(l.acquire(1, 1000, signal), { ok: false, limit: 'batches_in_flight', waitedMs: 0, cancelled: true });
});

test('the candidate bucket refills continuously at its size per minute', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: undefined, perMinute: 600 }, clock);
  granted(track(l.acquire(600, 1000)).result()).release();
  assert.equal(l.availableTokens(), 0);
  clock.advance(1000);
  assert.equal(l.availableTokens(), 10, '600 a minute is 10 a second');
  const waiting = track(l.acquire(30, 60_000));
  await settle();
  assert.equal(waiting.result(), undefined);
  clock.advance(1999);
  await settle();
  assert.equal(waiting.result(), undefined, '29.99 tokens are not 30');
  clock.advance(1);
  await settle();
  const g = granted(waiting.result());
  assert.equal(g.waitedFor, 'candidates_per_minute');
  assert.equal(g.waitedMs, 2000);
  assert.ok(Math.abs(l.availableTokens()) < 1e-6);
  clock.advance(600_000);
  assert.equal(l.availableTokens(), 600, 'never more than the bucket holds');
});

test('a batch larger than the bucket waits for a full bucket, then takes it into debt that later batches wait out', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: undefined, perMinute: 60 }, clock);
  granted(track(l.acquire(30, 1000)).result()).release();
  const big = track(l.acquire(150, 120_000));
  clock.advance(29_999);
  await settle();
  assert.equal(big.result(), undefined, 'the bucket is not full yet');
  clock.advance(1);
  await settle();
  granted(big.result()).release();
  assert.equal(l.availableTokens(), -90, 'the 90 candidates over the bucket are owed');
  const small = track(l.acquire(1, 200_000));
  clock.advance(90_999);
  await settle();
  assert.equal(small.result(), undefined, 'the debt is repaid at the bucket\'s rate first');
  clock.advance(1);
  await settle();
  granted(small.result());
});

test('a small batch never overtakes a big one that came first', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: undefined, perMinute: 60 }, clock);
  granted(track(l.acquire(60, 1000)).result()).release();
  const big = track(l.acquire(50, 120_000));
  const small = track(l.acquire(1, 120_000));
  clock.advance(10_000);
  await settle();
  assert.equal(small.result(), undefined, '10 tokens would do for the small one, but it queues behind the big one');
  clock.advance(40_000);
  await settle();
  granted(big.result());
  assert.equal(small.result(), undefined);
  clock.advance(1000);
  await settle();
  granted(small.result());
});

test('a waiter refused for its wait lets the smaller one behind it through', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: undefined, perMinute: 60 }, clock);
  granted(track(l.acquire(60, 1000)).result()).release();
  const big = track(l.acquire(60, 5000));
  const small = track(l.acquire(5, 60_000));
  clock.advance(5000);
  await settle();
  assert.deepEqual(big.result(), { ok: false, limit: 'candidates_per_minute', waitedMs: 5000, cancelled: false });
  granted(small.result());
});

test('a waiter that fits by itself but queues behind a batch waiting for tokens is refused for the tokens', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 4, perMinute: 60 }, clock);
  granted(track(l.acquire(60, 1000)).result()).release();
  const big = track(l.acquire(60, 60_000));
  const behind = track(l.acquire(0, 1000));
  clock.advance(1000);
  await settle();
  assert.deepEqual(behind.result(), { ok: false, limit: 'candidates_per_minute', waitedMs: 1000, cancelled: false });
  assert.equal(big.result(), undefined);
});

test('both limits at once: a batch waits for a slot and for tokens', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: 60 }, clock);
  const first = granted(track(l.acquire(60, 1000)).result());
  const next = track(l.acquire(30, 120_000));
  clock.advance(30_000);
  await settle();
  assert.equal(next.result(), undefined, 'tokens are back, the slot is not');
  first.release();
  await settle();
  assert.equal(granted(next.result()).waitedMs, 30_000);
});

test('raising a limit serves the waiters that fit now; a new bucket starts full; a smaller one caps the level', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock);
  granted(track(l.acquire(1, 1000)).result());
  const waiting = track(l.acquire(1, 60_000));
  await settle();
  l.configure({ maxInFlight: 2, perMinute: undefined });
  await settle();
  granted(waiting.result());
  l.configure({ maxInFlight: 2, perMinute: 100 });
  assert.equal(l.availableTokens(), 100);
  l.configure({ maxInFlight: 2, perMinute: 40 });
  assert.equal(l.availableTokens(), 40);
});

test('removing every limit serves every waiter', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock);
  granted(track(l.acquire(1, 1000)).result());
  const waiters = [track(l.acquire(1, 60_000)), track(l.acquire(1, 60_000))];
  l.configure({ maxInFlight: undefined, perMinute: undefined });
  await settle();
  for (const w of waiters) granted(w.result());
  assert.equal(clock.pending, 0);
});

test('thousands of waiters timing out leave the queue empty and no timer behind', async () => {
  const clock = new StepClock();
  const l = new ClientLimiter({ maxInFlight: 1, perMinute: undefined }, clock);
  const first = granted(track(l.acquire(1, 1000)).result());
  const waiters = Array.from({ length: 2000 }, (_, i) => track(l.acquire(1, 1000 + i)));
  clock.advance(5000);
  await settle();
  assert.ok(waiters.every((w) => w.result()?.ok === false));
  assert.equal(l.waiting, 0);
  first.release();
  granted(track(l.acquire(1, 1000)).result());
  assert.equal(clock.pending, 0);
});
