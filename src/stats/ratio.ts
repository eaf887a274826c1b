/**
 * Tool success Σs / Σn over an arm's units. Lines of one trajectory are correlated, so the variance comes from the
 * units' (s, n) pairs by the delta method (Deng, Knoblich and Lu, KDD 2018), never from a binomial over lines.
 */

/** Per-arm sums over units: K = units, S = Σs, N = Σn, Q_ss = Σs², Q_nn = Σn², Q_sn = Σs·n. */
export interface RatioSums {
  units: number;
  s: number;
  n: number;
  ss: number;
  nn: number;
  sn: number;
}

export interface RatioEstimate {
  rate: number;
  variance: number;
}

export const EMPTY_SUMS: RatioSums = Object.freeze({ units: 0, s: 0, n: 0, ss: 0, nn: 0, sn: 0 });

/**
 * r = S/N, V = K/(K-1)·(Q_ss - 2r·Q_sn + r²·Q_nn)/N², i.e. (var_s - 2r·cov_sn + r²·var_n)/(K·n̄²) with sample
 * (co)variances on K-1. Units with n = 0 may stay in K: they change r by nothing and V by K/(K-1) only.
 */
export function ratioEstimate(x: RatioSums): RatioEstimate | undefined {
  const { units: k, s, n, ss, nn, sn } = x;
  if (![k, s, n, ss, nn, sn].every(Number.isFinite)) return undefined;
  if (!(k >= 2) || !(n > 0)) return undefined;
  const r = s / n;
  // Σ(s - r·n)² written out; rounding can leave it a hair below 0 when every unit has s = r·n.
  const residual = Math.max(0, ss - 2 * r * sn + r * r * nn);
  return { rate: r, variance: ((k / (k - 1)) * residual) / (n * n) };
}
