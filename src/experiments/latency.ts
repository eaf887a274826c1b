/**
 * Experiment latency buckets in ms, four per doubling: upper bounds 5 * 2^(i/4) up to 655 360 ms (past the 600 s a
 * batch may last), one more bucket for anything slower. Each is ~19% wide, which bounds a percentile's error; fixed
 * buckets are what counters can hold cluster-wide (samples cannot be shipped to Redis and sorted).
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Array.from({ length: 69 }, (_, i) => 5 * 2 ** (i / 4));

export function latencyBucket(ms: number): number {
  if (!(ms > 5)) return 0;
  return Math.min(Math.ceil(4 * Math.log2(ms / 5) - 1e-9), LATENCY_BOUNDS_MS.length);
}

/** Linear inside the bucket holding the rank, as Prometheus' histogram_quantile; past the last bound: that bound. */
export function bucketQuantile(buckets: ReadonlyMap<number, number>, q: number): number | undefined {
  const total = [...buckets.values()].reduce((sum, n) => sum + n, 0);
  if (total <= 0) return undefined;
  const top = LATENCY_BOUNDS_MS.at(-1) ?? 0;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i <= LATENCY_BOUNDS_MS.length; i++) {
    const n = buckets.get(i) ?? 0;
    if (n <= 0) continue;
    if (below + n >= rank) {
      const hi = LATENCY_BOUNDS_MS[i];
      if (hi === undefined) return top;
      const lo = LATENCY_BOUNDS_MS[i - 1] ?? 0;
      return lo + ((hi - lo) * (rank - below)) / n;
    }
    below += n;
  }
  return top;
}
