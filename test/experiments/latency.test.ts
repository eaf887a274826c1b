/**
 * Percentiles from the report's latency buckets (the statistics themselves are src/stats, tested in test/stats).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketQuantile, LATENCY_BOUNDS_MS, latencyBucket } from '../../src/experiments/latency.js';

function near(actual: number | undefined, expected: number, tol: number, what = ''): void {
  assert.ok(actual !== undefined && Math.abs(actual - expected) <= tol, `${what} ${actual} != ${expected} ± ${tol}`);
}

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
