/**
 * The strata of an experiment's report (docs/experiments.md#strata). All descriptive: always-valid inference handles
 * looks, not strata, so only the overall primary comparison carries `sequential` and a stopping rule.
 */
import { clampResult, perComparisonAlpha, postStratified, type FixedResult, type Unit } from '../../stats/index.js';
import { compare, differenceRange, metricSums, outcomeKind, type AnalysisOptions, type ArmInput, type Comparison } from './comparison.js';
import { emptyArm } from '../arm-counts.js';
import { OTHER_STRATUM, type KeyUnits } from '../units.js';

const ALPHA = 0.05;
const STRATA_LABEL = 'descriptive: no stopping rule (only the overall primary comparison carries one)';

interface StratumArm {
  arm: string;
  /** Trajectories, or keys with the key as unit. */
  units: number;
  trajectories: number;
}

interface StratumReport {
  /** 1..experiments.max_strata in the order values were first seen; 0 = other. */
  slot: number;
  value: string;
  arms: StratumArm[];
  comparisons: Comparison[];
}

export interface StrataReport {
  by: string;
  max: number;
  label: string;
  values: StratumReport[];
  /** Σ w_h d_h with w_h = K_h / K, per non-control arm, on the primary metric. */
  post_stratified: { arm: string; control: string; fixed: (FixedResult & { strata_used: number; strata_skipped: number }) | null; reason: string | null }[];
}

type StratumInputs = (arm: ArmInput, slot: number) => ArmInput;

function descriptive(c: Comparison): Comparison {
  return { ...c, label: `${c.label}; in one stratum, ${STRATA_LABEL}`, sequential_reason: 'descriptive: a stratum carries no stopping rule' };
}

/** `other` last. */
function slotsOf(arms: readonly ArmInput[]): number[] {
  const slots = new Set<number>();
  for (const a of arms) for (const h of a.counts.strata.keys()) slots.add(h);
  return [...slots].sort((x, y) => (x === 0 ? 1 : y === 0 ? -1 : x - y));
}

export function stratumInputs(keyStrata: ReadonlyMap<string, ReadonlyMap<number, KeyUnits>>): StratumInputs {
  return (a, slot) => {
    const keys = keyStrata.get(a.arm)?.get(slot);
    return { arm: a.arm, weight: a.weight, counts: a.counts.strata.get(slot) ?? emptyArm(), ...(keys === undefined ? {} : { keys }) };
  };
}

export function analyseStrata(
  by: string,
  max: number,
  labels: readonly (string | undefined)[],
  arms: readonly ArmInput[],
  control: string,
  o: AnalysisOptions,
  inStratum: StratumInputs,
): StrataReport {
  const unit: Unit = o.unit ?? 'trajectory';
  const c = arms.find((a) => a.arm === control);
  const others = arms.filter((a) => a.arm !== control);
  const alpha = perComparisonAlpha(ALPHA, arms.length);
  const kind = outcomeKind(arms);
  const values: StratumReport[] = [];
  const perSlot = slotsOf(arms).map((slot) => ({ slot, arms: arms.map((a) => inStratum(a, slot)) }));
  for (const { slot, arms: hArms } of perSlot) {
    const hc = hArms.find((a) => a.arm === control);
    const comparisons = hc === undefined ? [] : hArms.filter((a) => a.arm !== control).map((t) => descriptive(compare(o.primary, false, hc, t, alpha, o, kind)));
    values.push({
      slot,
      value: slot === 0 ? OTHER_STRATUM : (labels[slot - 1] ?? `(slot ${slot})`),
      arms: hArms.map((a) => ({ arm: a.arm, units: unit === 'key' ? (a.keys?.units ?? 0) : a.counts.units, trajectories: a.counts.units })),
      comparisons,
    });
  }
  const post: StrataReport['post_stratified'] = [];
  if (c !== undefined && kind !== 'mixed') {
    const k = kind ?? 'success';
    for (const t of others) {
      const strata = perSlot.map((h) => ({
        control: metricSums(o.primary, k, unit, inStratum(c, h.slot)),
        treatment: metricSums(o.primary, k, unit, inStratum(t, h.slot)),
      }));
      const r = postStratified(strata, alpha);
      post.push({ arm: t.arm, control, fixed: 'reason' in r ? null : clampResult(r, differenceRange(o.primary, kind)), reason: 'reason' in r ? r.reason : null });
    }
  }
  return { by, max, label: STRATA_LABEL, values, post_stratified: post };
}
