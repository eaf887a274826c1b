/**
 * The report's statistics against values computed by hand or published: Wilson intervals, the pooled
 * two-proportion z-test, Newcombe's interval for a difference, and percentiles from latency buckets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bucketQuantile,
  compareProportions,
  erfc,
  LATENCY_BOUNDS_MS,
  latencyBucket,
  twoSidedP,
  wilson,
} from '../../src/experiments/stats.js';

function near(actual: number | undefined, expected: number, tol: number, what = ''): void {
  assert.ok(actual !== undefined && Math.abs(actual - expected) <= tol, `${what} ${actual} != ${expected} ± ${tol}`);
}

test('erfc and the two-sided normal p-value match tabulated values', () => {
  near(erfc(0), 1, 1e-7);
  near(erfc(1), 0.157299207, 1e-7);
  near(erfc(-1), 1.842700793, 1e-7);
  near(twoSidedP(1.959963984540054), 0.05, 1e-6);
  near(twoSidedP(-2.5758293035489), 0.01, 1e-6);
  near(twoSidedP(0), 1, 1e-7);
});

test('Wilson 95%: 8/10 -> [0.490, 0.943]; 0/10 and 10/10 stay inside [0, 1]; no trial -> undefined', () => {
  const [lo, hi] = wilson(8, 10)!;
  near(lo, 0.4902, 1e-4, 'lower');
  near(hi, 0.9433, 1e-4, 'upper');
  const zero = wilson(0, 10)!;
  assert.equal(zero[0], 0);
  near(zero[1], 0.2775, 1e-4);
  const all = wilson(10, 10)!;
  near(all[0], 0.7225, 1e-4);
  assert.equal(all[1], 1);
  // 3/5 by hand: centre (0.6 + 1.92073/5) / (1 + 3.84146/5) = 0.55659, half 0.32582.
  near(wilson(3, 5)![0], 0.2307, 1e-4);
  near(wilson(3, 5)![1], 0.8824, 1e-4);
  assert.equal(wilson(0, 0), undefined);
});

test('two-proportion z-test, by hand: 40/100 vs 60/100', () => {
  // pooled p = 100/200 = 0.5; se = sqrt(0.5 * 0.5 * (1/100 + 1/100)) = sqrt(0.005) = 0.0707107;
  // z = (0.6 - 0.4) / 0.0707107 = 2.828427 (z^2 = 8, the 2x2 chi-square); p = erfc(2.828427 / sqrt 2) = erfc(2)
  // = 0.0046777.
  const d = compareProportions(40, 100, 60, 100)!;
  near(d.difference, 0.2, 1e-12);
  near(d.z, 2.828427, 1e-6);
  near(d.pValue, 0.0046777, 1e-6);
  // The other direction flips the sign, not the p-value.
  const r = compareProportions(60, 100, 40, 100)!;
  near(r.z, -2.828427, 1e-6);
  near(r.pValue, d.pValue, 1e-12);
});

test('two-proportion z-test, by hand: 15/20 vs 5/20 (chi-square 10) and a small-sample case', () => {
  // pooled 0.5, se = sqrt(0.25 * 0.1) = 0.158114, z = -0.5 / 0.158114 = -3.162278, p = erfc(sqrt 5) = 0.0015654.
  const d = compareProportions(15, 20, 5, 20)!;
  near(d.z, -3.162278, 1e-6);
  near(d.pValue, 0.0015654, 1e-6);
  // 3/5 vs 1/2: pooled 4/7, se = sqrt(4/7 * 3/7 * 0.7) = 0.414039, z = -0.1 / 0.414039 = -0.241523, p = 0.80915.
  const s = compareProportions(3, 5, 1, 2)!;
  near(s.difference, -0.1, 1e-12);
  near(s.z, -0.241523, 1e-6);
  near(s.pValue, 0.80915, 1e-5);
});

test("Newcombe's interval for a difference: his published example 56/70 - 48/80 = 0.2, [0.0524, 0.3339]", () => {
  const d = compareProportions(48, 80, 56, 70)!;
  near(d.difference, 0.2, 1e-12);
  near(d.ci95[0], 0.0524, 1e-4);
  near(d.ci95[1], 0.3339, 1e-4);
});

test('degenerate comparisons: no trial -> undefined; identical all-success arms -> p = 1, z undefined', () => {
  assert.equal(compareProportions(0, 0, 3, 4), undefined);
  const same = compareProportions(5, 5, 7, 7)!;
  assert.equal(same.difference, 0);
  assert.equal(same.z, undefined);
  assert.equal(same.pValue, 1);
});

test('latency buckets: 5 ms .. 655 s, four per doubling, upper bounds inclusive', () => {
  assert.equal(LATENCY_BOUNDS_MS.length, 69);
  assert.equal(LATENCY_BOUNDS_MS[0], 5);
  assert.equal(LATENCY_BOUNDS_MS[68], 655_360);
  assert.equal(latencyBucket(0), 0);
  assert.equal(latencyBucket(5), 0);
  assert.equal(latencyBucket(5.01), 1);
  assert.equal(latencyBucket(10), 4);
  assert.equal(latencyBucket(10.01), 5);
  assert.equal(latencyBucket(600_000), 68);
  assert.equal(latencyBucket(1e9), 69);
  for (let i = 1; i < 69; i++) {
    assert.equal(latencyBucket(LATENCY_BOUNDS_MS[i]!), i, `bound ${i}`);
    assert.equal(latencyBucket(LATENCY_BOUNDS_MS[i - 1]! * 1.0001), i, `just above bound ${i - 1}`);
  }
});

test('bucket quantiles interpolate inside the bucket where the rank falls', () => {
  assert.equal(bucketQuantile(new Map(), 0.5), undefined);
  const lo4 = LATENCY_BOUNDS_MS[3]!; // 8.409 ms
  // 10 samples in (8.409, 10]: the median is halfway through that bucket.
  near(bucketQuantile(new Map([[4, 10]]), 0.5), lo4 + (10 - lo4) * 0.5, 1e-9);
  // One sample in [0, 5] and one in (8.409, 10]: p50 = rank 1 = top of bucket 0; p95 = rank 1.9.
  const two = new Map([[0, 1], [4, 1]]);
  near(bucketQuantile(two, 0.5), 5, 1e-9);
  near(bucketQuantile(two, 0.95), lo4 + (10 - lo4) * 0.9, 1e-9);
  // Past the last bound reads as the last bound.
  assert.equal(bucketQuantile(new Map([[69, 3]]), 0.5), 655_360);
});

test('percentiles from buckets stay within one bucket (~19%) of the exact ones', () => {
  let seed = 7;
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const samples = Array.from({ length: 2000 }, () => 20 * Math.exp(3 * rnd()));
  const buckets = new Map<number, number>();
  for (const s of samples) buckets.set(latencyBucket(s), (buckets.get(latencyBucket(s)) ?? 0) + 1);
  const sorted = [...samples].sort((a, b) => a - b);
  for (const q of [0.5, 0.95]) {
    const exact = sorted[Math.ceil(q * sorted.length) - 1]!;
    const approx = bucketQuantile(buckets, q)!;
    assert.ok(Math.abs(approx / exact - 1) < 0.19, `q=${q}: ${approx} vs ${exact}`);
  }
});
