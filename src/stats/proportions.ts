/** Proportions with one unit per trial (an episode's success): Wilson, Newcombe and Fisher's exact test. */
import { GatewayError } from '../errors.js';
import { zCritical } from './normal.js';

export function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `alpha must be in (0, 1), got ${alpha}`);
}

function isCount(x: number): boolean {
  return Number.isInteger(x) && x >= 0;
}

/** Wilson, not Wald: arms have few units early, and Wilson stays inside [0, 1] and honest at 0/n and n/n. */
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

/** Newcombe's hybrid score interval (method 10): the Wald one is degenerate at 0/n or n/n, where experiments start. */
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
 * Fisher's exact test, two-sided as scipy and R define it, with R's relative tolerance of 1e-7 so that mirror
 * tables, equal in exact arithmetic but not after rounding, count as ties.
 */
export function fisherExactTwoSided(xc: number, nc: number, xt: number, nt: number): number {
  for (const [name, v] of [['xc', xc], ['nc', nc], ['xt', xt], ['nt', nt]] as const) {
    if (!isCount(v)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `fisherExactTwoSided: ${name} must be a non-negative integer, got ${v}`);
  }
  if (xc > nc) throw new GatewayError('GATEWAY_ERR_INTERNAL', `fisherExactTwoSided: xc (${xc}) exceeds nc (${nc})`);
  if (xt > nt) throw new GatewayError('GATEWAY_ERR_INTERNAL', `fisherExactTwoSided: xt (${xt}) exceeds nt (${nt})`);
  // x = successes in control is hypergeometric given the margins: m successes overall, nc draws from nc + nt.
  const m = xc + xt;
  const total = nc + nt;
  const lo = Math.max(0, m - nt);
  const hi = Math.min(m, nc);
  if (lo === hi) return 1;
  // w(x+1)/w(x) = (m - x)(nc - x) / ((x + 1)(nt - m + x + 1)). The second pass recomputes each weight the same way,
  // so ties are decided on identical numbers.
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
