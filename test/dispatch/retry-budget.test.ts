/**
 * The retry budget's arithmetic, Envoy's way: retries in progress stay below max(min, ratio x every sub-request
 * in flight, retries included).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetryBudget } from '../../src/dispatch/retry-budget.js';

/** Take slots until refused; how many were granted. */
function drain(b: RetryBudget): number {
  let n = 0;
  while (b.tryRetry()) n++;
  return n;
}

test('a quiet gateway still has the floor: min retries', () => {
  const b = new RetryBudget(0.2, 3);
  assert.equal(drain(b), 3);
  b.retryDone();
  assert.equal(drain(b), 1, 'a slot given back can be taken again');
});

test('under load the budget is ratio x sub-requests in flight, and retries in flight count as active', () => {
  const b = new RetryBudget(0.2, 3);
  for (let i = 0; i < 50; i++) b.attemptStarted();
  assert.equal(drain(b), 10, '20% of 50');
  // The retries' own sub-requests are in flight too: 60 active now, so 12 retries in all.
  for (let i = 0; i < 10; i++) b.attemptStarted();
  assert.equal(drain(b), 2);
  assert.deepEqual(b.inFlight, { active: 60, retrying: 12 });
  for (let i = 0; i < 60; i++) b.attemptEnded();
  for (let i = 0; i < 12; i++) b.retryDone();
  assert.deepEqual(b.inFlight, { active: 0, retrying: 0 });
});

test('ratio 0 leaves only the floor; min 0 and ratio 0 allow no retry at all', () => {
  const b = new RetryBudget(0, 2);
  for (let i = 0; i < 100; i++) b.attemptStarted();
  assert.equal(drain(b), 2);
  assert.equal(drain(new RetryBudget(0, 0)), 0);
});
