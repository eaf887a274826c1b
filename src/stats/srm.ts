/**
 * Sample-ratio mismatch (Kohavi, Tang and Xu, ch. 21): Pearson's chi-square (valid read once) and Lindon and
 * Malek's Dirichlet-multinomial test (NeurIPS 2022, valid however often it is read).
 */
import { GatewayError } from '../errors.js';
import { gammaQ, lnGamma } from './gamma.js';

/** Flag at p < 0.001: a true mismatch is usually gross, and a false flag stops a valid experiment. */
export const SRM_ALPHA = 0.001;

export interface GoodnessOfFit {
  statistic: number;
  df: number;
  p_value: number;
}

/** Q(df/2, x/2). */
export function chiSquareSurvival(x: number, df: number): number {
  if (!(df > 0) || !Number.isFinite(df)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `chiSquareSurvival: df must be a positive number, got ${df}`);
  if (Number.isNaN(x)) return Number.NaN;
  if (x <= 0) return 1;
  return gammaQ(df / 2, x / 2);
}

function probabilities(observed: number[], weights: number[], who: string): number[] {
  if (observed.length !== weights.length) {
    throw new GatewayError('GATEWAY_ERR_INTERNAL', `${who}: ${observed.length} observed counts but ${weights.length} weights`);
  }
  observed.forEach((o, i) => {
    if (!Number.isInteger(o) || o < 0) throw new GatewayError('GATEWAY_ERR_INTERNAL', `${who}: observed[${i}] must be a non-negative integer, got ${o}`);
  });
  weights.forEach((w, i) => {
    if (!(w > 0) || !Number.isFinite(w)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `${who}: weights[${i}] must be a positive number, got ${w}`);
  });
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}

/** Weights on any positive scale. No unit, or a single arm: statistic 0, p 1. */
export function chiSquareGoodnessOfFit(observed: number[], weights: number[]): GoodnessOfFit {
  const p = probabilities(observed, weights, 'chiSquareGoodnessOfFit');
  const n = observed.reduce((a, b) => a + b, 0);
  const df = observed.length - 1;
  if (n === 0 || df < 1) return { statistic: 0, df: Math.max(df, 0), p_value: 1 };
  let statistic = 0;
  p.forEach((pi, i) => {
    const o = observed[i] ?? 0; // the same length (probabilities checks it)
    const e = n * pi;
    statistic += ((o - e) * (o - e)) / e;
  });
  return { statistic, df, p_value: chiSquareSurvival(statistic, df) };
}

/**
 * log BF = lnΓ(A) - lnΓ(A+n) + Σ_j [lnΓ(A·w_j + x_j) - lnΓ(A·w_j)] - Σ_j x_j·ln w_j is a nonnegative martingale
 * under correct assignment, so p = min(1, 1/BF) is below α at any read with probability at most α (Ville).
 */
export function sequentialSrm(observed: number[], weights: number[], concentration = 10): { log_bayes_factor: number; p_value: number } {
  if (!(concentration > 0) || !Number.isFinite(concentration)) {
    throw new GatewayError('GATEWAY_ERR_INTERNAL', `sequentialSrm: concentration must be a positive number, got ${concentration}`);
  }
  const w = probabilities(observed, weights, 'sequentialSrm');
  const n = observed.reduce((a, b) => a + b, 0);
  let log = lnGamma(concentration) - lnGamma(concentration + n);
  w.forEach((wj, j) => {
    const x = observed[j] ?? 0; // the same length (probabilities checks it)
    const a = concentration * wj;
    log += lnGamma(a + x) - lnGamma(a) - x * Math.log(wj);
  });
  return { log_bayes_factor: log, p_value: Math.min(1, Math.exp(-log)) };
}

/**
 * Chi-square of [reported; units - reported] over the arms with a unit, without continuity correction (scipy's
 * chi2_contingency, correction=False): outcomes lost unevenly bias the comparison as an SRM does.
 */
export function coverageHomogeneity(reported: number[], units: number[]): GoodnessOfFit {
  if (reported.length !== units.length) {
    throw new GatewayError('GATEWAY_ERR_INTERNAL', `coverageHomogeneity: ${reported.length} reported counts but ${units.length} unit counts`);
  }
  reported.forEach((r, i) => {
    const u = units[i] ?? Number.NaN; // same length, checked above
    if (!Number.isInteger(r) || r < 0) throw new GatewayError('GATEWAY_ERR_INTERNAL', `coverageHomogeneity: reported[${i}] must be a non-negative integer, got ${r}`);
    if (!Number.isInteger(u) || u < r) throw new GatewayError('GATEWAY_ERR_INTERNAL', `coverageHomogeneity: units[${i}] must be an integer >= reported[${i}], got ${u}`);
  });
  const arms = units.map((u, i) => ({ u, r: reported[i] ?? 0 })).filter((a) => a.u > 0); // same length
  const total = arms.reduce((a, b) => a + b.u, 0);
  const matched = arms.reduce((a, b) => a + b.r, 0);
  const df = arms.length - 1;
  if (df < 1 || matched === 0 || matched === total) return { statistic: 0, df: Math.max(df, 0), p_value: 1 };
  const share = matched / total;
  let statistic = 0;
  for (const { u, r } of arms) {
    const e1 = u * share;
    const e0 = u - e1;
    statistic += ((r - e1) * (r - e1)) / e1 + ((u - r - e0) * (u - r - e0)) / e0;
  }
  return { statistic, df, p_value: chiSquareSurvival(statistic, df) };
}
