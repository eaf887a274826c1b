/**
 * The statistics of the experiment report (docs/operations.md#experiment-report): intervals and
 * tests on proportions, and latency
 * percentiles from a fixed-bucket histogram. Pure functions on counts, so the report is the same whichever
 * replica computes it from the cluster-wide counters.
 */

/** The two-sided 95% normal quantile. */
const Z95 = 1.959963984540054;

/**
 * Complementary error function, Numerical Recipes' `erfcc` (Chebyshev fit, fractional error < 1.2e-7
 * everywhere): p-values are printed to three significant digits, far coarser than that.
 */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 +
        t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** P(|Z| >= |z|) for a standard normal Z. */
export function twoSidedP(z: number): number {
  return Math.min(1, erfc(Math.abs(z) / Math.SQRT2));
}

/**
 * Wilson score interval for `successes` out of `trials`. Chosen over the normal (Wald) interval because arms
 * often have few tool calls early in an experiment, and Wilson stays inside [0, 1] and honest at 0/n and n/n.
 * undefined when there is no trial.
 */
export function wilson(successes: number, trials: number, z = Z95): [number, number] | undefined {
  if (!(trials > 0)) return undefined;
  const p = successes / trials;
  const z2 = z * z;
  const denom = 1 + z2 / trials;
  const centre = (p + z2 / (2 * trials)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials))) / denom;
  // At 0/n and n/n the bound is exactly 0 or 1 in exact arithmetic; floating point leaves dust (0.9999999999999999).
  const lower = successes <= 0 ? 0 : Math.max(0, centre - half);
  const upper = successes >= trials ? 1 : Math.min(1, centre + half);
  return [lower, upper];
}

interface ProportionDifference {
  /** p2 - p1. */
  difference: number;
  /** Newcombe's hybrid score interval (his method 10) for p2 - p1, built from both Wilson intervals. */
  ci95: [number, number];
  /** Pooled two-proportion z statistic for p2 - p1; undefined when the pooled proportion is 0 or 1. */
  z: number | undefined;
  /** Two-sided p-value of H0: p1 = p2 (pooled z-test). 1 when every trial of both arms had the same result. */
  pValue: number;
}

/**
 * Compares x2/n2 against x1/n1 (the difference is second minus first). undefined when an arm has no trial.
 * The pooled z-test is the textbook test for A/B proportions (equivalent to the 2x2 chi-square without
 * continuity correction); Newcombe's interval goes with it because the Wald interval of a difference is poor
 * at small counts, exactly where an experiment starts.
 */
export function compareProportions(x1: number, n1: number, x2: number, n2: number): ProportionDifference | undefined {
  const w1 = wilson(x1, n1);
  const w2 = wilson(x2, n2);
  if (w1 === undefined || w2 === undefined) return undefined;
  const p1 = x1 / n1;
  const p2 = x2 / n2;
  const d = p2 - p1;
  const lower = d - Math.sqrt((p2 - w2[0]) ** 2 + (w1[1] - p1) ** 2);
  const upper = d + Math.sqrt((w2[1] - p2) ** 2 + (p1 - w1[0]) ** 2);
  const pooled = (x1 + x2) / (n1 + n2);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (!(se > 0)) return { difference: d, ci95: [lower, upper], z: undefined, pValue: 1 };
  const z = d / se;
  return { difference: d, ci95: [lower, upper], z, pValue: twoSidedP(z) };
}

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
  const rank = q * total;
  let below = 0;
  for (let i = 0; i <= LATENCY_BOUNDS_MS.length; i++) {
    const n = buckets.get(i) ?? 0;
    if (n <= 0) continue;
    if (below + n >= rank) {
      if (i === LATENCY_BOUNDS_MS.length) return LATENCY_BOUNDS_MS[i - 1]!; // 1 <= i < LATENCY_BOUNDS_MS.length (loop bound)
      const lo = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!; // 1 <= i < LATENCY_BOUNDS_MS.length (loop bound)
      const hi = LATENCY_BOUNDS_MS[i]!; // 1 <= i < LATENCY_BOUNDS_MS.length (loop bound)
      return lo + ((hi - lo) * (rank - below)) / n;
    }
    below += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!; // LATENCY_BOUNDS_MS is a non-empty constant
}
