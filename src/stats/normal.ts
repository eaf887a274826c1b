/** The standard normal; erfc(x) = Q(1/2, x²), so SRM p-values around 1e-8 and below keep their digits. */
import { GatewayError } from '../errors.js';
import { gammaQ } from './gamma.js';

/** Relative error at most 1.1e-13 against scipy.special.erfc over [-6, 26]; it grows as x²·1e-16, from rounding x². */
export function erfc(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  if (x === 0) return 1;
  const upper = gammaQ(0.5, x * x);
  return x > 0 ? upper : 2 - upper;
}

/** Through erfc, so the lower tail keeps its relative accuracy (Φ(-10) ≈ 7.6e-24, not 0). */
export function normalCdf(x: number): number {
  return 0.5 * erfc(-x / Math.SQRT2);
}

export function twoSidedP(z: number): number {
  return Math.min(1, erfc(Math.abs(z) / Math.SQRT2));
}

// Acklam's rational approximation of the normal quantile (relative error 1.15e-9), refined below by one Halley step.
const A = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
const B = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
const C = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
const D = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
const P_LOW = 0.02425;

function poly(coefficients: number[], x: number): number {
  let r = 0;
  for (const c of coefficients) r = r * x + c;
  return r;
}

/** About 1e-14 relative. */
export function normalQuantile(p: number): number {
  if (!(p >= 0 && p <= 1)) return Number.NaN;
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  let x: number;
  if (p < P_LOW) {
    const q = Math.sqrt(-2 * Math.log(p));
    x = poly(C, q) / (poly(D, q) * q + 1);
  } else if (p <= 1 - P_LOW) {
    const q = p - 0.5;
    const r = q * q;
    x = (poly(A, r) * q) / (poly(B, r) * r + 1);
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x = -poly(C, q) / (poly(D, q) * q + 1);
  }
  // In the upper tail the error is measured on 1 - p, which erfc gives with full relative accuracy.
  const e = p > 0.5 ? 0.5 * erfc(x / Math.SQRT2) - (1 - p) : normalCdf(x) - p;
  const sign = p > 0.5 ? -1 : 1;
  const u = sign * e * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
  return x - u / (1 + (x * u) / 2);
}

const criticalCache = new Map<number, number>();

/** z_{1-α/2}. */
export function zCritical(alpha: number): number {
  if (!(alpha > 0 && alpha < 1)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `alpha must be in (0, 1), got ${alpha}`);
  let z = criticalCache.get(alpha);
  if (z === undefined) {
    z = normalQuantile(1 - alpha / 2);
    // Reports use a handful of alphas (α, α/(k-1)); the bound only guards against a caller sweeping them.
    if (criticalCache.size < 64) criticalCache.set(alpha, z);
  }
  return z;
}
