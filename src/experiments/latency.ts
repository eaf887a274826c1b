/**
 * Experiment latency per arm: fixed log-spaced buckets, because counters can hold them cluster-wide (samples
 * cannot be shipped to Redis and sorted). The statistics of the report are in src/stats.
 */
/**
 * Latency buckets in milliseconds, log-spaced four per doubling from 5 ms: upper bounds 5 * 2^(i/4), up to
 * 655 360 ms (past the 600 s a batch may last). Bucket i holds (bound[i-1], bound[i]]; bucket 0 holds [0, 5];
 * one more bucket (index LATENCY_BOUNDS_MS.length) holds anything slower. Each bucket is ~19% wide, which
 * bounds the error of a percentile read from them; fixed buckets are what counters can hold cluster-wide
 * (samples cannot be shipped to Redis and sorted).
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Array.from({ length: 69 }, (_, i) => 5 * 2 ** (i / 4));

/** The bucket index of one latency sample. */
export function latencyBucket(ms: number): number {
  if (!(ms > 5)) return 0;
  const i = Math.ceil(4 * Math.log2(ms / 5) - 1e-9);
  return Math.min(i, LATENCY_BOUNDS_MS.length);
}

/**
 * The q-quantile (0 < q < 1) of the samples counted in `buckets` (bucket index -> count), interpolated
 * linearly inside the bucket where the rank falls, as Prometheus' histogram_quantile does. Approximate by
 * construction: the true value is somewhere in that bucket. undefined without samples. Samples past the
 * last bound read as the last bound.
 */
export function bucketQuantile(buckets: ReadonlyMap<number, number>, q: number): number | undefined {
  let total = 0;
  for (const n of buckets.values()) total += n;
  if (total <= 0) return undefined;
  const top = LATENCY_BOUNDS_MS.at(-1) ?? 0;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i <= LATENCY_BOUNDS_MS.length; i++) {
    const n = buckets.get(i) ?? 0;
    if (n <= 0) continue;
    if (below + n >= rank) {
      // The bucket past the last bound reads as the last bound; the first starts at 0.
      const hi = LATENCY_BOUNDS_MS[i];
      if (hi === undefined) return top;
      const lo = LATENCY_BOUNDS_MS[i - 1] ?? 0;
      return lo + ((hi - lo) * (rank - below)) / n;
    }
    below += n;
  }
  return top;
}
