/** The sample-ratio check of a split (docs/experiment-method.md#sample-ratio-mismatch-srm). */
import { chiSquareGoodnessOfFit, sequentialSrm, SRM_ALPHA, type Unit } from '../../stats/index.js';
import { keysOf, type ArmInput } from './comparison.js';

export interface Srm {
  /** Keys: each counted once, in the arm it drew. */
  unit: Unit;
  observed: Record<string, number>;
  expected: Record<string, number>;
  p_value: number | null;
  sequential_p_value: number | null;
  flagged: boolean;
  cause: string | null;
}

/**
 * The flag reads the chi-square p at every look, which inflates its false alarms above 0.1%; the
 * Dirichlet-multinomial p beside it is valid at any look.
 */
export function sampleRatio(arms: readonly ArmInput[], unit: Unit = 'trajectory'): Srm {
  const unitsOf = (a: ArmInput): number => (unit === 'key' ? keysOf(a).units : a.counts.units);
  const observed = Object.fromEntries(arms.map((a) => [a.arm, unitsOf(a)]));
  const total = arms.reduce((s, a) => s + unitsOf(a), 0);
  const weightSum = arms.reduce((s, a) => s + a.weight, 0);
  const expected = Object.fromEntries(arms.map((a) => [a.arm, Math.round((total * a.weight * 1000) / weightSum) / 1000]));
  if (total === 0 || arms.length < 2) return { unit, observed, expected, p_value: null, sequential_p_value: null, flagged: false, cause: null };
  const obs = arms.map(unitsOf);
  const w = arms.map((a) => a.weight);
  const gof = chiSquareGoodnessOfFit(obs, w);
  const seq = sequentialSrm(obs, w);
  const causes: string[] = [];
  for (const a of arms) {
    const { not_ready, ejected } = a.counts.rerouted;
    if (not_ready > 0) causes.push(`${not_ready} trajectories rerouted from ${a.arm}: not ready`);
    if (ejected > 0) causes.push(`${ejected} trajectories rerouted from ${a.arm}: ejected`);
  }
  return {
    unit,
    observed,
    expected,
    p_value: gof.p_value,
    sequential_p_value: seq.p_value,
    flagged: gof.p_value < SRM_ALPHA,
    cause: causes.length > 0 ? causes.join('; ') : null,
  };
}

/** `a 10, b 12`. */
export function perArm(counts: Record<string, number>): string {
  return Object.entries(counts).map(([a, n]) => `${a} ${n}`).join(', ');
}

export function srmWarning(srm: Srm): string {
  const p = srm.p_value === null ? 'n/a' : srm.p_value.toExponential(2);
  return `sample-ratio mismatch (p = ${p}): ${srm.unit === 'key' ? 'keys' : 'trajectories'} ${perArm(srm.observed)}, expected ${perArm(srm.expected)}${srm.cause === null ? '' : `; cause: ${srm.cause}`}. The comparison is not trustworthy: do not stop on a win; fix the cause, then reset the experiment`;
}
