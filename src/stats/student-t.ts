/**
 * Student's t, for comparisons with few units (docs/experiment-method.md#few-keys-t-with-k-2-df), on the
 * regularized incomplete beta function by its Lentz continued fraction.
 */
import { EPS, lnGamma, MAX_ITERATIONS, TINY } from './gamma.js';

/** The continued fraction of I_x(a, b) (Numerical Recipes' betacf); converges fast for x < (a+1)/(a+b+2). */
function betaFraction(a: number, b: number, x: number): number {
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m < MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
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
