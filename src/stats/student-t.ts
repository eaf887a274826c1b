/**
 * Student's t, for comparisons with few units (docs/experiment-method.md#few-keys-t-with-k-2-df), on the
 * regularized incomplete beta function by its Lentz continued fraction.
 */
import { EPS, Lentz, lnGamma, MAX_ITERATIONS } from './gamma.js';

/** The continued fraction of I_x(a, b) (Numerical Recipes' betacf); converges fast for x < (a+1)/(a+b+2). */
function betaFraction(a: number, b: number, x: number): number {
  // The first term as a step from d = 1, c = ∞: d becomes 1 / (1 - (a+b)x/(a+1)) and c stays 1.
  const f = new Lentz(Infinity, 1);
  let h = f.step(-((a + b) * x) / (a + 1), 1);
  for (let m = 1; m < MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    h *= f.step((m * (b - m) * x) / ((a + m2 - 1) * (a + m2)), 1);
    const delta = f.step((-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1)), 1);
    h *= delta;
    if (Math.abs(delta - 1) < EPS) break;
  }
  return h;
}

export function incompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0) || !(b > 0) || Number.isNaN(x)) return Number.NaN;
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  // The fraction converges on the side of the mode; the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) gives the other.
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(a, b, x)) / a;
  return 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

/** I_{df/(df+t²)}(df/2, 1/2). */
export function tTwoSidedP(t: number, df: number): number {
  if (!(df > 0) || Number.isNaN(t)) return Number.NaN;
  if (!Number.isFinite(t)) return 0;
  return Math.min(1, incompleteBeta(df / (df + t * t), df / 2, 0.5));
}

/** t_{1-α/2, df}, by bisection on tTwoSidedP (monotone in t). */
export function tCritical(alpha: number, df: number): number {
  if (!(alpha > 0 && alpha < 1) || !(df > 0)) return Number.NaN;
  let lo = 0;
  let hi = 1;
  while (tTwoSidedP(hi, df) > alpha) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-13 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (tTwoSidedP(mid, df) > alpha) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
