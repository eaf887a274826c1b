/**
 * The post-stratified difference: per-stratum differences weighted by the strata's shares of units. Scenario
 * difficulty is a large source of variance and BENCH runs scenarios in order, so this takes it out.
 */
import { type FixedResult, type Unavailable, waldResult } from './compare.js';
import { ratioEstimate, type RatioSums } from './ratio.js';

const METHOD_POST_STRATIFIED = 'post-stratified delta method';

/**
 * d = Σ w_h (r_th - r_ch), V = Σ w_h² (V_ch + V_th), w_h = K_h / K over the strata used. A stratum where either arm
 * has no estimate is skipped (strata_skipped); its units do not enter K.
 */
export function postStratified(
  strata: Array<{ control: RatioSums; treatment: RatioSums }>,
  alpha = 0.05,
): (FixedResult & { strata_used: number; strata_skipped: number }) | Unavailable {
  const used: Array<{ units: number; d: number; v: number }> = [];
  for (const { control, treatment } of strata) {
    const c = ratioEstimate(control);
    const t = ratioEstimate(treatment);
    if (c === undefined || t === undefined) continue;
    used.push({ units: control.units + treatment.units, d: t.rate - c.rate, v: c.variance + t.variance });
  }
  if (used.length === 0) return { reason: 'no stratum has 2 trajectories with a tool line in each arm' };
  const k = used.reduce((a, h) => a + h.units, 0);
  let d = 0;
  let v = 0;
  for (const h of used) {
    const w = h.units / k;
    d += w * h.d;
    v += w * w * h.v;
  }
  const se = Math.sqrt(v);
  if (!(se > 0)) return { reason: 'no variation between trajectories yet (the variance is 0)' };
  return { ...waldResult(d, se, alpha, METHOD_POST_STRATIFIED), strata_used: used.length, strata_skipped: strata.length - used.length };
}
