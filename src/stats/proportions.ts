/**
 * Proportions with one unit per trial (an episode's success, once outcomes are posted): the Wilson interval of
 * one arm, Newcombe's interval for the difference of two, and Fisher's exact test.
 */
import { GatewayError } from '../errors.js';
import { zCritical } from './normal.js';

export function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `alpha must be in (0, 1), got ${alpha}`);
}

function isCount(x: number): boolean {
  return Number.isInteger(x) && x >= 0;
}

/**
 * Wilson score interval for `successes` out of `trials` at level 1 - alpha. Chosen over the normal (Wald)
 * interval because arms have few units early in an experiment, and Wilson stays inside [0, 1] and honest at
 * 0/n and n/n. undefined when there is no trial or the counts are not counts with successes <= trials.
 */
export function wilson(successes: number, trials: number, alpha = 0.05): [number, number] | undefined {
  checkAlpha(alpha);
  if (!(trials > 0) || !Number.isFinite(trials) || !(successes >= 0) || successes > trials) return undefined;
  const z = zCritical(alpha);
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

/**
 * Newcombe's hybrid score interval (his method 10, Statistics in Medicine 1998) for p_t - p_c, with
 * p_c = xc/nc (control) and p_t = xt/nt (treatment), built from both Wilson intervals. The Wald interval of a
 * difference is poor at small counts and degenerate at 0/n or n/n, exactly where an experiment starts.
 * undefined when an arm has no trial.
 */
export function newcombe(xc: number, nc: number, xt: number, nt: number, alpha = 0.05): [number, number] | undefined {
  const wc = wilson(xc, nc, alpha);
  const wt = wilson(xt, nt, alpha);
  if (wc === undefined || wt === undefined) return undefined;
  const pc = xc / nc;
  const pt = xt / nt;
  const d = pt - pc;
  const lower = d - Math.sqrt((pt - wt[0]) ** 2 + (wc[1] - pc) ** 2);
  const upper = d + Math.sqrt((wt[1] - pt) ** 2 + (pc - wc[0]) ** 2);
  return [Math.max(-1, lower), Math.min(1, upper)];
}

/**
 * Fisher's exact test of the 2x2 table [[xc, nc - xc], [xt, nt - xt]], two-sided as scipy.stats.fisher_exact
 * and R's fisher.test define it: the total probability, given the margins, of every table no more likely than
 * the observed one, with R's relative tolerance of 1e-7 so that mirror tables, equal in exact arithmetic but
 * not after rounding, count as ties (scipy's 1e-14 assumes exactly computed terms). O(min(nc, nt)) steps and
 * O(1) memory: the hypergeometric weights come from the ratio of consecutive terms, in log space so nothing
 * overflows, each term scaled by the largest. Throws a GatewayError naming the argument when a count is not a count.
 */
export function fisherExactTwoSided(xc: number, nc: number, xt: number, nt: number): number {
  for (const [name, v] of [['xc', xc], ['nc', nc], ['xt', xt], ['nt', nt]] as const) {
    if (!isCount(v)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `fisherExactTwoSided: ${name} must be a non-negative integer, got ${v}`);
  }
  if (xc > nc) throw new GatewayError('GATEWAY_ERR_INTERNAL', `fisherExactTwoSided: xc (${xc}) exceeds nc (${nc})`);
  if (xt > nt) throw new GatewayError('GATEWAY_ERR_INTERNAL', `fisherExactTwoSided: xt (${xt}) exceeds nt (${nt})`);
  // The table's first cell x = successes in control follows a hypergeometric law given the margins:
  // m = successes overall, nc draws from nc + nt units.
  const m = xc + xt;
  const total = nc + nt;
  const lo = Math.max(0, m - nt);
  const hi = Math.min(m, nc);
  if (lo === hi) return 1;
  // log w(x) relative to w(lo), by w(x+1)/w(x) = (m - x)(nc - x) / ((x + 1)(nt - m + x + 1)). Two passes over
  // the support instead of an array of it, so memory stays O(1) however large the counts: the first finds the
  // mode's log weight (the largest, for scaling) and the observed table's; the second sums, recomputing each
  // log weight the same way, so ties are decided on identical numbers.
  const step = (x: number): number => Math.log(((m - x) * (nc - x)) / ((x + 1) * (total - nc - m + x + 1)));
  let logW = 0;
  let max = 0;
  let observed = 0;
  for (let x = lo; x <= hi; x++) {
    if (x === xc) observed = logW;
    if (logW > max) max = logW;
    if (x < hi) logW += step(x);
  }
  const threshold = observed + Math.log1p(1e-7);
  let sum = 0;
  let tail = 0;
  logW = 0;
  for (let x = lo; x <= hi; x++) {
    const w = Math.exp(logW - max);
    sum += w;
    if (logW <= threshold) tail += w;
    if (x < hi) logW += step(x);
  }
  return Math.min(1, tail / sum);
}
