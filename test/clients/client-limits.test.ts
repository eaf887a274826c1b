/**
 * Every client's limiter by name (docs/operations.md#client-keys): a reload keeps a client's state, applies its new
 * limits, starts new clients and lets removed ones go; clients without limits are not counted at all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Admission } from '../../src/clients/client-limiter.js';
import { ClientLimits } from '../../src/clients/client-limits.js';
import type { ClientsConfig } from '../../src/config/schema.js';
import { StepClock } from '../helpers/step-clock.js';

function clients(over: Record<string, Partial<ClientsConfig[string]>>): ClientsConfig {
  return Object.fromEntries(Object.entries(over).map(([n, c]) => [n, { key: `${n}-key-0123456789`, max_wait_s: 30, ...c }]));
}

function track(a: Admission | Promise<Admission>): { result(): Admission | undefined } {
  // A method, not a property: an assertion on a property would narrow it for the rest of the test.
  let result: Admission | undefined;
  if (a instanceof Promise) void a.then((r) => (result = r));
  else result = a;
  return { result: () => result };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a client without limits is admitted at once and never counted', () => {
  const limits = new ClientLimits(clients({ open: {} }), undefined, new StepClock());
  assert.equal(limits.limited('open'), false);
  assert.equal(limits.limiterOf('open'), undefined);
  for (let i = 0; i < 100; i++) assert.equal((limits.acquire('open', 1000, 1000) as Admission).ok, true);
});

test('the wait is max_wait_s, or the time left before the batch deadline when that is shorter', async () => {
  const clock = new StepClock();
  const limits = new ClientLimits(clients({ a: { max_batches_in_flight: 1, max_wait_s: 10 } }), undefined, clock);
  assert.equal((limits.acquire('a', 1, 60_000) as Admission).ok, true);
  const capped = track(limits.acquire('a', 1, 3000));
  const full = track(limits.acquire('a', 1, 60_000));
  clock.advance(3000);
  await settle();
  assert.equal(capped.result()?.ok, false);
  assert.equal(full.result(), undefined);
  clock.advance(7000);
  await settle();
  assert.deepEqual(full.result(), { ok: false, limit: 'batches_in_flight', waitedMs: 10_000, cancelled: false });
});

test('a reload keeps a client\'s slots and bucket by name and applies its new limits', async () => {
  const clock = new StepClock();
  const limits = new ClientLimits(clients({ a: { max_batches_in_flight: 1, max_candidates_per_minute: 100 } }), undefined, clock);
  const held = limits.acquire('a', 80, 1000) as Admission;
  assert.equal(held.ok, true);
  const before = limits.limiterOf('a');
  limits.configure(clients({ a: { max_batches_in_flight: 1, max_candidates_per_minute: 200 }, b: { max_batches_in_flight: 3 } }));
  assert.equal(limits.limiterOf('a'), before, 'the same limiter, by name');
  assert.equal(limits.limiterOf('a')?.inFlight, 1, 'the batch in flight still holds its slot');
  assert.equal(limits.limiterOf('a')?.availableTokens(), 20, 'the bucket keeps its level under the bigger size');
  const waiting = track(limits.acquire('a', 1, 1000));
  await settle();
  assert.equal(waiting.result(), undefined);
  assert.equal(limits.limiterOf('b')?.inFlight, 0, 'a new client starts fresh');
  if (held.ok) held.release();
  await settle();
  assert.equal(waiting.result()?.ok, true);
});

test('removing a client, or all its limits, serves its waiters and forgets it', async () => {
  const clock = new StepClock();
  const limits = new ClientLimits(clients({ a: { max_batches_in_flight: 1 }, b: { max_batches_in_flight: 1 } }), undefined, clock);
  assert.equal((limits.acquire('a', 1, 1000) as Admission).ok, true);
  assert.equal((limits.acquire('b', 1, 1000) as Admission).ok, true);
  const a = track(limits.acquire('a', 1, 60_000));
  const b = track(limits.acquire('b', 1, 60_000));
  assert.deepEqual([...limits.waitingByClient()], [['a', 1], ['b', 1]]);
  limits.configure(clients({ b: {} }));
  await settle();
  assert.equal(a.result()?.ok, true);
  assert.equal(b.result()?.ok, true);
  assert.equal(limits.limited('a'), false);
  assert.equal(limits.limited('b'), false);
  assert.deepEqual([...limits.waitingByClient()], []);
  assert.equal(clock.pending, 0);
});

test('waits, their end and refusals are reported with the client\'s name', async () => {
  const clock = new StepClock();
  const log: string[] = [];
  const limits = new ClientLimits(
    clients({ 'team-a': { max_batches_in_flight: 1, max_wait_s: 2 } }),
    {
      waited: (c, l) => log.push(`waited ${c} ${l}`),
      waitEnded: (c, s, served) => log.push(`ended ${c} ${s} ${served}`),
      refused: (c, l) => log.push(`refused ${c} ${l}`),
    },
    clock,
  );
  assert.equal((limits.acquire('team-a', 1, 60_000) as Admission).ok, true);
  const w = track(limits.acquire('team-a', 1, 60_000));
  clock.advance(2000);
  await settle();
  assert.equal(w.result()?.ok, false);
  assert.deepEqual(log, ['waited team-a batches_in_flight', 'ended team-a 2 false', 'refused team-a batches_in_flight']);
});
