/**
 * Sample-ratio mismatch: were units assigned to the arms in the proportions the weights say? A mismatch means
 * something other than the coin decided which arm a unit got (an arm not ready, rerouting, a filter), and the
 * comparison is then not trustworthy (Kohavi, Tang and Xu, "Trustworthy Online Controlled Experiments", ch. 21).
 * Two tests: Pearson's chi-square goodness of fit (valid when read once), and Lindon and Malek's
 * Dirichlet-multinomial test (NeurIPS 2022), valid however often it is read.
 */
import { gammaQ, lnGamma } from './gamma.js';

/** Flag at p < 0.001: a true mismatch is usually gross, and a false flag stops a valid experiment. */
export const SRM_ALPHA = 0.001;

export interface GoodnessOfFit {
  statistic: number;
  df: number;
  p_value: number;
}

/** P(X >= x) for X ~ chi-square with df degrees of freedom: Q(df/2, x/2). 1 for x <= 0. */
export function chiSquareSurvival(x: number, df: number): number {
  if (!(df > 0) || !Number.isFinite(df)) throw new RangeError(`chiSquareSurvival: df must be a positive number, got ${df}`);
  if (Number.isNaN(x)) return Number.NaN;
  if (x <= 0) return 1;
  return gammaQ(df / 2, x / 2);
}

/** The weights as probabilities, with a RangeError naming the problem when they cannot be. */
function probabilities(observed: number[], weights: number[], who: string): number[] {
  if (observed.length !== weights.length) {
    throw new RangeError(`${who}: ${observed.length} observed counts but ${weights.length} weights`);
  }
  observed.forEach((o, i) => {
    if (!Number.isInteger(o) || o < 0) throw new RangeError(`${who}: observed[${i}] must be a non-negative integer, got ${o}`);
  });
  weights.forEach((w, i) => {
    if (!(w > 0) || !Number.isFinite(w)) throw new RangeError(`${who}: weights[${i}] must be a positive number, got ${w}`);
  });
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}

/**
 * Pearson's chi-square test of `observed` counts per arm against the `weights` (any positive scale), df = k - 1.
 * No unit, or a single arm: statistic 0, p 1.
 */
export function chiSquareGoodnessOfFit(observed: number[], weights: number[]): GoodnessOfFit {
  const p = probabilities(observed, weights, 'chiSquareGoodnessOfFit');
  const n = observed.reduce((a, b) => a + b, 0);
  const df = observed.length - 1;
  if (n === 0 || df < 1) return { statistic: 0, df: Math.max(df, 0), p_value: 1 };
  let statistic = 0;
  observed.forEach((o, i) => {
    const e = n * p[i]!; // p has one entry per observed count
    statistic += ((o - e) * (o - e)) / e;
  });
  return { statistic, df, p_value: chiSquareSurvival(statistic, df) };
}

/**
 * Lindon and Malek's always-valid SRM test: the Bayes factor of a Dirichlet(A·w) mixture over assignment
 * probabilities against the weights w themselves,
 *   log BF = lnΓ(A) - lnΓ(A+n) + Σ_j [lnΓ(A·w_j + x_j) - lnΓ(A·w_j)] - Σ_j x_j·ln w_j,
 * a nonnegative martingale under correct assignment, so p = min(1, 1/BF) is below α at ANY read with
 * probability at most α (Ville's inequality). The concentration A (default 10) sets how far from w the prior
 * looks; p is instantaneous, a function of the current counts alone.
 */
export function sequentialSrm(observed: number[], weights: number[], concentration = 10): { log_bayes_factor: number; p_value: number } {
  if (!(concentration > 0) || !Number.isFinite(concentration)) {
    throw new RangeError(`sequentialSrm: concentration must be a positive number, got ${concentration}`);
  }
  const w = probabilities(observed, weights, 'sequentialSrm');
  const n = observed.reduce((a, b) => a + b, 0);
  let log = lnGamma(concentration) - lnGamma(concentration + n);
  observed.forEach((x, j) => {
    const a = concentration * w[j]!; // w has one entry per observed count
    log += lnGamma(a + x) - lnGamma(a) - x * Math.log(w[j]!);
  });
  return { log_bayes_factor: log, p_value: Math.min(1, Math.exp(-log)) };
}
