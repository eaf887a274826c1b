/**
 * src/stats at the edges a live report reaches: empty arms, one unit, no variation, counters that are not numbers,
 * a single arm, no assignment yet. A report must get a reason or a neutral value there, never NaN or an exception;
 * exceptions are kept for programming errors (an alpha outside (0, 1), a negative count), and they name the argument.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  fixedBinary,
  fixedRatio,
  meanSums,
  perComparisonAlpha,
  sequentialBinary,
  sequentialRatio,
} from '../../src/stats/compare.js';
import { EMPTY_SUMS, ratioEstimate, type RatioSums } from '../../src/stats/ratio.js';
import { chiSquareGoodnessOfFit, sequentialSrm } from '../../src/stats/srm.js';
import { wilson } from '../../src/stats/proportions.js';

const SOME: RatioSums = { units: 25, s: 60, n: 100, ss: 190, nn: 460, sn: 290 };

test('empty, single-unit and non-finite sums give a reason, never NaN', () => {
  assert.deepEqual(fixedRatio(EMPTY_SUMS, SOME), { reason: 'needs 2 trajectories with a tool line per arm' });
  assert.deepEqual(fixedRatio(SOME, { ...SOME, units: 1 }), { reason: 'needs 2 trajectories with a tool line per arm' });
  assert.deepEqual(fixedRatio(SOME, { ...SOME, n: 0, s: 0, ss: 0, nn: 0, sn: 0 }), { reason: 'needs 2 trajectories with a tool line per arm' });
  assert.equal(ratioEstimate({ ...SOME, ss: Number.NaN }), undefined);
  assert.equal(ratioEstimate({ ...SOME, n: Infinity }), undefined);
  assert.deepEqual(sequentialRatio(EMPTY_SUMS, SOME, { plannedTrajectories: 200 }), { reason: 'needs 20 trajectories per arm' });
  // Every unit with the same rate: the variance is 0, and a zero-width interval would claim certainty.
  const flat = meanSums(30, 30, 30);
  assert.ok('reason' in fixedRatio(flat, flat));
  assert.ok('reason' in sequentialRatio(flat, flat, { plannedTrajectories: 200 }));
  // Enough units: every number is finite.
  const f = fixedRatio(SOME, { ...SOME, s: 70, ss: 230, sn: 330 });
  assert.ok(!('reason' in f));
  for (const v of [f.difference, f.se, f.p_value, ...f.ci95]) assert.ok(Number.isFinite(v), JSON.stringify(f));
});

test('binary counts: 0/K and K/K in both arms, invalid counts give a reason', () => {
  const zero = fixedBinary({ units: 20, successes: 0 }, { units: 20, successes: 0 });
  assert.ok(!('reason' in zero));
  assert.equal(zero.difference, 0);
  assert.equal(zero.p_value, 1);
  assert.ok(zero.ci95[0] < 0 && zero.ci95[1] > 0);
  const all = sequentialBinary({ units: 30, successes: 30 }, { units: 30, successes: 30 }, { plannedTrajectories: 200 });
  assert.ok(!('reason' in all) && all.p_value === 1 && all.ci95[0] < 0 && all.ci95[1] > 0);
  assert.ok('reason' in fixedBinary({ units: 3, successes: 4 }, { units: 3, successes: 1 }));
  assert.ok('reason' in fixedBinary({ units: 3, successes: 1.5 }, { units: 3, successes: 1 }));
  assert.ok('reason' in sequentialBinary({ units: 30, successes: -1 }, { units: 30, successes: 1 }, { plannedTrajectories: 200 }));
  assert.equal(wilson(4, 3), undefined);
});

test('SRM with no unit, one arm or one unit is neutral', () => {
  assert.deepEqual(chiSquareGoodnessOfFit([0, 0, 0], [1, 1, 1]), { statistic: 0, df: 2, p_value: 1 });
  assert.deepEqual(chiSquareGoodnessOfFit([12], [1]), { statistic: 0, df: 0, p_value: 1 });
  const none = sequentialSrm([0, 0], [1, 3]);
  assert.ok(Math.abs(none.log_bayes_factor) < 1e-12 && none.p_value === 1);
  // One unit on a 50/50 split: BF = Γ(10)/Γ(11) · Γ(6)/Γ(5) / 0.5 = 1 exactly, up to lnΓ's rounding.
  assert.ok(Math.abs(sequentialSrm([1, 0], [1, 1]).p_value - 1) < 1e-12);
  assert.throws(() => sequentialSrm([1, 0], [1, 1], 0), /concentration must be a positive number/);
});

test('programming errors throw a GatewayError (GATEWAY_ERR_INTERNAL) naming the argument', () => {
  assert.throws(() => fixedRatio(SOME, SOME, 0), /alpha must be in \(0, 1\), got 0/);
  assert.throws(() => perComparisonAlpha(1.5, 3), /alpha must be in \(0, 1\), got 1.5/);
  assert.throws(() => sequentialRatio(SOME, SOME, { plannedTrajectories: 200, burnIn: 1 }), /burnIn must be at least 2/);
  assert.throws(() => sequentialBinary({ units: 1, successes: 0 }, { units: 1, successes: 0 }, { plannedTrajectories: -1 }), /plannedTrajectories/);
});
