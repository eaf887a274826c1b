/**
 * Ensemble candidate allocation: largest remainder, deterministic, ties in member order (docs/routing.md#ensembles).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateShares, ensembleLegs } from '../../src/routing/ensemble-shares.js';

test('8 over 1:1 gives 4 and 4', () => {
  assert.deepEqual(allocateShares(8, [1, 1]), [4, 4]);
});

test('5 over 2:1 gives 3 and 2', () => {
  assert.deepEqual(allocateShares(5, [2, 1]), [3, 2]);
});

test('1 over 1:1 gives the one candidate to the first member', () => {
  assert.deepEqual(allocateShares(1, [1, 1]), [1, 0]);
});

test('7 over 1:1:1 gives the leftover to the first member', () => {
  assert.deepEqual(allocateShares(7, [1, 1, 1]), [3, 2, 2]);
});

test('the largest remainder wins over member order', () => {
  // Quotas 1/3 and 2/3: the single candidate goes to the second member.
  assert.deepEqual(allocateShares(1, [1, 2]), [0, 1]);
  // Quotas 0.6, 0.9, 1.5: floors 0, 0, 1; the two left go to remainders .9 then .6.
  assert.deepEqual(allocateShares(3, [2, 3, 5]), [1, 1, 1]);
});

test('fractional shares equal up to rounding tie in member order', () => {
  // 0.1 and 0.2 have no exact binary form; 3 over 0.1:0.1:0.1 must still be 1, 1, 1 and 1 over them the first.
  assert.deepEqual(allocateShares(3, [0.1, 0.1, 0.1]), [1, 1, 1]);
  assert.deepEqual(allocateShares(1, [0.1, 0.2, 0.1, 0.2]), [0, 1, 0, 0]);
});

test('counts always sum to the total', () => {
  for (let total = 0; total <= 50; total++) {
    const counts = allocateShares(total, [3, 1.5, 7, 0.25]);
    assert.equal(counts.reduce((a, b) => a + b, 0), total);
  }
});

test('ensembleLegs skips members with no candidates and numbers offsets in member order', () => {
  assert.deepEqual(
    ensembleLegs(5, [
      { name: 'qwen', weight: 2 },
      { name: 'gpt', weight: 1 },
    ]),
    [
      { backend: 'qwen', count: 3, offset: 0 },
      { backend: 'gpt', count: 2, offset: 3 },
    ],
  );
  assert.deepEqual(
    ensembleLegs(1, [
      { name: 'qwen', weight: 1 },
      { name: 'gpt', weight: 1 },
    ]),
    [{ backend: 'qwen', count: 1, offset: 0 }],
  );
});

test('invalid totals or shares are refused', () => {
  assert.throws(() => allocateShares(1.5, [1]));
  assert.throws(() => allocateShares(2, [1, 0]));
  assert.throws(() => allocateShares(2, []));
});
