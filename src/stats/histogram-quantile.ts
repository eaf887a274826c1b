/** Prometheus's histogram_quantile, so the console's quantiles agree with a dashboard over the same series. */

export interface Bucket {
  le: number;
  /** Cumulative. */
  count: number;
}

/** Cumulative counts by `le` as a histogram metric writes it ("0.005", "+Inf"). */
export type LeCounts = Record<string, number>;

/** A histogram in seconds: its quantile in milliseconds, to the microsecond. */
export function quantileMs(counts: LeCounts, q: number): number | null {
  const s = histogramQuantile(Object.entries(counts).map(([le, count]) => ({ le: le === '+Inf' ? Infinity : Number(le), count })), q);
  return s === null ? null : Math.round(s * 1e6) / 1e3;
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
