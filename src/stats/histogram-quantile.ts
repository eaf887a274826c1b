/** Prometheus's histogram_quantile, so the console's quantiles agree with a dashboard over the same series. */

export interface Bucket {
  le: number;
  /** Cumulative. */
  count: number;
}

export function histogramQuantile(buckets: readonly Bucket[], q: number): number | null {
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.count ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of sorted) {
    if (b.count >= rank) {
      // In the +Inf bucket nothing bounds the value: the highest finite bound is the answer, as Prometheus gives.
      if (!Number.isFinite(b.le)) return prevLe;
      const inBucket = b.count - prevCount;
      return inBucket === 0 ? b.le : prevLe + ((b.le - prevLe) * (rank - prevCount)) / inBucket;
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}
