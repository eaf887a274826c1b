/** Treatment - control, fixed-horizon and always-valid (docs/experiment-method.md). */
import { GatewayError } from '../errors.js';
import { twoSidedP, zCritical } from './normal.js';
import { checkAlpha, fisherExactTwoSided, newcombe } from './proportions.js';
import { ratioEstimate, type RatioEstimate, type RatioSums } from './ratio.js';
import { tCritical, tTwoSidedP } from './student-t.js';

export interface FixedResult {
  difference: number;
  ci95: [number, number];
  p_value: number;
  se: number;
  alpha: number;
  method: string;
  /** Absent when the interval and p come from the normal. */
  df?: number;
}

export interface SequentialResult {
  difference: number;
  ci95: [number, number];
  p_value: number;
  alpha: number;
  method: string;
  planned_trajectories: number;
  /** ρ², with c = ρ²·(K_c + K_t). */
  rho2: number;
}

export type Unavailable = { reason: string };

interface BinaryCounts {
  units: number;
  successes: number;
}

interface SequentialOptions {
  alpha?: number;
  /** K*, the units (both arms together) at which the boundary is tightest. */
  plannedTrajectories: number;
  /** Units per arm before anything is shown (default 20): variances from a handful of units have heavy tails. */
  burnIn?: number;
}

const METHOD_FIXED_RATIO = 'delta method, trajectory as unit';
const METHOD_FIXED_RATIO_KEY = 'delta method, key as unit';
const METHOD_FIXED_MEANS = 'difference of means (Welch standard error), trajectory as unit';
export const FEW_KEYS = 30;

export type Unit = 'trajectory' | 'key';
const METHOD_SEQUENTIAL = 'normal-mixture always-valid (mSPRT)';
const METHOD_FIXED_BINARY = 'Newcombe hybrid score; Fisher exact p';
const DEFAULT_BURN_IN = 20;

/** d ± z·se and the two-sided z p-value, or with `df`, from t_df. */
export function waldResult(d: number, se: number, alpha: number, method: string, df?: number): FixedResult {
  if (df === undefined) {
    const half = zCritical(alpha) * se;
    return { difference: d, ci95: [d - half, d + half], p_value: twoSidedP(d / se), se, alpha, method };
  }
  const half = tCritical(alpha, df) * se;
  return { difference: d, ci95: [d - half, d + half], p_value: tTwoSidedP(d / se, df), se, alpha, method: `${method}, t with ${df} df`, df };
}

/** K - 2 when an arm has fewer than FEW_KEYS keys, else none (the normal). */
export function keyDf(unit: Unit, control: number, treatment: number): number | undefined {
  return unit === 'key' && Math.min(control, treatment) < FEW_KEYS && control + treatment > 2 ? control + treatment - 2 : undefined;
}

/** d = r_t - r_c, SE = sqrt(V_c + V_t). Needs 2 units and n > 0 per arm, and SE > 0. */
export function fixedRatio(control: RatioSums, treatment: RatioSums, alpha = 0.05, unit: Unit = 'trajectory', what = 'with a tool line'): FixedResult | Unavailable {
  checkAlpha(alpha);
  const both = estimates(control, treatment, unit === 'key' ? 'keys' : 'trajectories', what);
  if ('reason' in both) return both;
  const df = keyDf(unit, control.units, treatment.units);
  return waldResult(both.t.rate - both.c.rate, Math.sqrt(both.variance), alpha, unit === 'key' ? METHOD_FIXED_RATIO_KEY : METHOD_FIXED_RATIO, df);
}

function estimates(control: RatioSums, treatment: RatioSums, units: string, what: string): { c: RatioEstimate; t: RatioEstimate; variance: number } | Unavailable {
  const c = ratioEstimate(control);
  const t = ratioEstimate(treatment);
  if (c === undefined || t === undefined) return { reason: `needs 2 ${units} ${what} per arm` };
  const variance = c.variance + t.variance;
  if (!(variance > 0)) return { reason: `no variation between ${units} yet (the variance is 0)` };
  return { c, t, variance };
}

export interface ScoreSums {
  units: number;
  sum: number;
  squares: number;
}

/** SE = sqrt(var_c/K_c + var_t/K_t) (Welch). */
export function fixedMeans(control: ScoreSums, treatment: ScoreSums, alpha = 0.05): FixedResult | Unavailable {
  checkAlpha(alpha);
  const both = estimates(meanSums(control.units, control.sum, control.squares), meanSums(treatment.units, treatment.sum, treatment.squares), 'trajectories', 'with a score');
  if ('reason' in both) return both;
  return waldResult(both.t.rate - both.c.rate, Math.sqrt(both.variance), alpha, METHOD_FIXED_MEANS);
}

export function sequentialMeans(control: ScoreSums, treatment: ScoreSums, opts: SequentialOptions): SequentialResult | Unavailable {
  return sequentialRatio(meanSums(control.units, control.sum, control.squares), meanSums(treatment.units, treatment.sum, treatment.squares), opts, 'trajectories', 'with a score', 'trajectories with a score');
}

/** ρ² = (2 ln(1/α) + ln(1 + 2 ln(1/α))) / K*: about 7.94 / K* at α = 0.05. */
function mixtureRho2(alpha: number, plannedTrajectories: number): number {
  checkAlpha(alpha);
  if (!(plannedTrajectories > 0) || !Number.isFinite(plannedTrajectories)) {
    throw new GatewayError('GATEWAY_ERR_INTERNAL', `plannedTrajectories must be a positive number, got ${plannedTrajectories}`);
  }
  const l = 2 * Math.log(1 / alpha);
  return (l + Math.log(1 + l)) / plannedTrajectories;
}

/**
 * mSPRT (Johari, Pekelis and Walsh): c = ρ²·units, p = min(1, sqrt(1+c)·exp(-c·z²/(2(1+c)))), interval
 * d ± sqrt(V·(1+c)/c · ln((1+c)/α²)). p is instantaneous (not a running minimum): it depends on the sums alone.
 */
export function mixtureBoundary(d: number, variance: number, units: number, alpha: number, plannedTrajectories: number): SequentialResult {
  const rho2 = mixtureRho2(alpha, plannedTrajectories);
  const c = rho2 * units;
  const z2 = (d * d) / variance;
  const p = Math.min(1, Math.sqrt(1 + c) * Math.exp((-c * z2) / (2 * (1 + c))));
  const half = Math.sqrt(((variance * (1 + c)) / c) * Math.log((1 + c) / (alpha * alpha)));
  return {
    difference: d,
    ci95: [d - half, d + half],
    p_value: p,
    alpha,
    method: METHOD_SEQUENTIAL,
    planned_trajectories: plannedTrajectories,
    rho2,
  };
}

function burnInOf(opts: SequentialOptions): number {
  const b = opts.burnIn ?? DEFAULT_BURN_IN;
  if (!(b >= 2) || !Number.isFinite(b)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `burnIn must be at least 2, got ${b}`);
  return b;
}

export function sequentialRatio(
  control: RatioSums,
  treatment: RatioSums,
  opts: SequentialOptions,
  units = 'trajectories',
  what = 'with a tool line',
  burnInUnit = units,
): SequentialResult | Unavailable {
  const alpha = opts.alpha ?? 0.05;
  const burnIn = burnInOf(opts);
  mixtureRho2(alpha, opts.plannedTrajectories); // validates before any early return
  if (!(control.units >= burnIn) || !(treatment.units >= burnIn)) return { reason: `needs ${burnIn} ${burnInUnit} per arm` };
  const both = estimates(control, treatment, units, what);
  if ('reason' in both) return both;
  return mixtureBoundary(both.t.rate - both.c.rate, both.variance, control.units + treatment.units, alpha, opts.plannedTrajectories);
}

function validBinary(x: BinaryCounts): boolean {
  return Number.isInteger(x.units) && Number.isInteger(x.successes) && x.successes >= 0 && x.successes <= x.units;
}

/**
 * Newcombe's hybrid score interval (method 10) and Fisher's exact two-sided p (not mid-p). `se` is Agresti-Caffo's,
 * descriptive only: it stays above 0 at 17/17 against 0/16, where the Wald one is 0.
 */
export function fixedBinary(control: BinaryCounts, treatment: BinaryCounts, alpha = 0.05): FixedResult | Unavailable {
  checkAlpha(alpha);
  if (!validBinary(control) || !validBinary(treatment)) return { reason: 'invalid counts (successes must be integers between 0 and units)' };
  const ci = newcombe(control.successes, control.units, treatment.successes, treatment.units, alpha);
  if (ci === undefined) return { reason: 'needs an outcome in each arm' };
  const d = treatment.successes / treatment.units - control.successes / control.units;
  const p = fisherExactTwoSided(control.successes, control.units, treatment.successes, treatment.units);
  const se = Math.sqrt(smoothedVariance(control) + smoothedVariance(treatment));
  return { difference: d, ci95: ci, p_value: p, se, alpha, method: METHOD_FIXED_BINARY };
}

/** p̃(1-p̃)/K with p̃ = (x+1)/(K+2): never 0, so the mixture does not degenerate at 0/K or K/K. */
function smoothedVariance(x: BinaryCounts): number {
  const p = (x.successes + 1) / (x.units + 2);
  return (p * (1 - p)) / x.units;
}

export const BINARY_UNIT = 'trajectories with an outcome';

export function sequentialBinary(control: BinaryCounts, treatment: BinaryCounts, opts: SequentialOptions): SequentialResult | Unavailable {
  const alpha = opts.alpha ?? 0.05;
  const burnIn = burnInOf(opts);
  mixtureRho2(alpha, opts.plannedTrajectories);
  if (!validBinary(control) || !validBinary(treatment)) return { reason: 'invalid counts (successes must be integers between 0 and units)' };
  if (control.units < burnIn || treatment.units < burnIn) return { reason: `needs ${burnIn} ${BINARY_UNIT} per arm` };
  const d = treatment.successes / treatment.units - control.successes / control.units;
  const v = smoothedVariance(control) + smoothedVariance(treatment);
  return mixtureBoundary(d, v, control.units + treatment.units, alpha, opts.plannedTrajectories);
}

/** n = 1 per unit: r is then the mean, V its variance / K. */
export function meanSums(units: number, sum: number, sumSquares: number): RatioSums {
  return { units, s: sum, n: units, ss: sumSquares, nn: units, sn: sum };
}

/** Bonferroni over the k - 1 comparisons with the control. */
export function perComparisonAlpha(alpha: number, arms: number): number {
  checkAlpha(alpha);
  return arms <= 2 ? alpha : alpha / (arms - 1);
}
