/**
 * The analysis of one experiment (docs/experiments.md; the method in docs/experiment-method.md): each non-control
 * arm against the control on the primary metric (fixed-horizon and always-valid, at α/(k-1)), the other outcome
 * metric and the secondary metrics descriptively, the sample-ratio check of a split, and the warnings a researcher
 * must read first. Pure: counts in, report pieces out, the statistics from src/stats.
 */
import {
  chiSquareGoodnessOfFit,
  coverageHomogeneity,
  FEW_KEYS,
  fixedBinary,
  fixedMeans,
  fixedRatio,
  meanSums,
  sequentialMeans,
  perComparisonAlpha,
  sequentialBinary,
  sequentialRatio,
  sequentialSrm,
  SRM_ALPHA,
  type FixedResult,
  type RatioSums,
  type ScoreSums,
  type SequentialResult,
  type Unavailable,
  type Unit,
} from '../stats/index.js';
import { toolSums, type ArmCounts } from './arm-counts.js';
import type { KeyUnits } from './units.js';

export type Metric = 'tool_success' | 'outcome';
export type SecondaryMetric = 'stages_per_trajectory' | 'steps_per_trajectory' | 'env_error_share' | 'failure_reason_share' | 'error_candidate_share';

/** Which outcomes the outcome comparison reads: the kind posted, or `mixed` when both were (refused). */
type OutcomeKind = 'success' | 'score';

export const LABELS: Record<Metric, string> = {
  tool_success: 'process metric: tool success over observed robot lines, not episode success',
  outcome: 'episode success',
};
const SCORE_LABEL = 'episode score (mean per unit)';
const MIXED_REASON = 'both success and score outcomes were posted to this experiment: they are not compared together (post one kind per experiment)';

const ALPHA = 0.05;

export interface Comparison {
  arm: string;
  control: string;
  metric: Metric;
  /** For the outcome metric: the kind of outcome compared (null before any outcome, or when both kinds were posted). */
  outcome_kind: OutcomeKind | null;
  primary: boolean;
  label: string;
  fixed: (FixedResult & { valid_when: string }) | null;
  fixed_reason: string | null;
  sequential: SequentialResult | null;
  sequential_reason: string | null;
}

export interface Secondary {
  arm: string;
  control: string;
  metric: SecondaryMetric;
  fixed: FixedResult | null;
  fixed_reason: string | null;
}

export interface Srm {
  /** What was counted: trajectories, or assign_by keys (each key counted once, in the arm it drew). */
  unit: Unit;
  observed: Record<string, number>;
  expected: Record<string, number>;
  p_value: number | null;
  sequential_p_value: number | null;
  flagged: boolean;
  cause: string | null;
}

export interface ArmInput {
  arm: string;
  weight: number;
  counts: ArmCounts;
  /** The arm's sums with the assign_by key as the unit; absent on an experiment whose unit is the trajectory. */
  keys?: KeyUnits;
}

export interface AnalysisOptions {
  primary: Metric;
  plannedTrajectories: number;
  burnIn: number;
  /** The randomization unit; default the trajectory. */
  unit?: Unit;
}

const NO_KEYS: KeyUnits = Object.freeze({
  units: 0,
  tool: Object.freeze({ units: 0, s: 0, n: 0, ss: 0, nn: 0, sn: 0 }),
  success: Object.freeze({ units: 0, s: 0, n: 0, ss: 0, nn: 0, sn: 0 }),
  score: Object.freeze({ units: 0, s: 0, n: 0, ss: 0, nn: 0, sn: 0 }),
});

function keysOf(a: ArmInput): KeyUnits {
  return a.keys ?? NO_KEYS;
}

function scoreSums(c: ArmCounts): ScoreSums {
  return { units: c.scoreN, sum: c.scoreSum, squares: c.scoreSquares };
}

/** The kind of outcome the arms were posted: success, score, both (`mixed`), or none yet (null). */
export function outcomeKind(arms: readonly ArmInput[]): OutcomeKind | 'mixed' | null {
  const success = arms.some((a) => a.counts.outcomeReported > 0);
  const score = arms.some((a) => a.counts.scoreN > 0);
  return success && score ? 'mixed' : score ? 'score' : success ? 'success' : null;
}

/**
 * An arm's per-unit sums of `metric` as ratio sums (docs/experiment-method.md): what the key-unit comparisons
 * and the post-stratified estimate read. A success or score with the trajectory as unit is a mean (n = 1 each).
 */
export function metricSums(metric: Metric, kind: OutcomeKind, unit: Unit, a: ArmInput): RatioSums {
  const k = keysOf(a);
  if (metric === 'tool_success') return unit === 'key' ? k.tool : toolSums(a.counts);
  if (kind === 'score') return unit === 'key' ? k.score : meanSums(a.counts.scoreN, a.counts.scoreSum, a.counts.scoreSquares);
  return unit === 'key' ? k.success : meanSums(a.counts.outcomeReported, a.counts.outcomeSuccess, a.counts.outcomeSuccess);
}

const FIXED_VALID_WHEN = 'valid only at a number of trajectories fixed in advance, read once';

function split<T extends object>(r: T | Unavailable): { value: T | null; reason: string | null } {
  return 'reason' in r ? { value: null, reason: r.reason } : { value: r, reason: null };
}

function binary(c: ArmCounts): { units: number; successes: number } {
  return { units: c.outcomeReported, successes: c.outcomeSuccess };
}

/** The fixed tool-success comparison, shown once each arm has 2 trajectories with a robot line. */
function fixedTool(c: ArmCounts, t: ArmCounts, alpha: number): FixedResult | Unavailable {
  if (c.unitsWithLines < 2 || t.unitsWithLines < 2) return { reason: 'needs 2 trajectories with a robot line per arm' };
  return fixedRatio(toolSums(c), toolSums(t), alpha);
}

function outcomeWhat(kind: OutcomeKind): string {
  return kind === 'score' ? 'with a score' : 'with an outcome';
}

function fixedOf(metric: Metric, kind: OutcomeKind, unit: Unit, c: ArmInput, t: ArmInput, alpha: number): FixedResult | Unavailable {
  if (unit === 'key') {
    return fixedRatio(metricSums(metric, kind, unit, c), metricSums(metric, kind, unit, t), alpha, 'key', metric === 'tool_success' ? 'with a tool line' : outcomeWhat(kind));
  }
  if (metric === 'tool_success') return fixedTool(c.counts, t.counts, alpha);
  if (kind === 'score') return fixedMeans(scoreSums(c.counts), scoreSums(t.counts), alpha);
  return fixedBinary(binary(c.counts), binary(t.counts), alpha);
}

function sequentialOf(metric: Metric, kind: OutcomeKind, unit: Unit, c: ArmInput, t: ArmInput, alpha: number, o: AnalysisOptions): SequentialResult | Unavailable {
  const opts = { alpha, plannedTrajectories: o.plannedTrajectories, burnIn: o.burnIn };
  if (unit === 'key') {
    return sequentialRatio(metricSums(metric, kind, unit, c), metricSums(metric, kind, unit, t), opts, 'keys', metric === 'tool_success' ? 'with a tool line' : outcomeWhat(kind));
  }
  if (metric === 'tool_success') return sequentialRatio(toolSums(c.counts), toolSums(t.counts), opts);
  if (kind === 'score') return sequentialMeans(scoreSums(c.counts), scoreSums(t.counts), opts);
  return sequentialBinary(binary(c.counts), binary(t.counts), opts);
}

/** One metric's comparison of `t` against `c`; the always-valid part for the primary metric only. */
export function compare(metric: Metric, primary: boolean, c: ArmInput, t: ArmInput, alpha: number, o: AnalysisOptions, kind: OutcomeKind | 'mixed' | null): Comparison {
  const unit = o.unit ?? 'trajectory';
  const k: OutcomeKind = kind === 'score' ? 'score' : 'success';
  const mixed = metric === 'outcome' && kind === 'mixed';
  const fixed = split(mixed ? { reason: MIXED_REASON } : fixedOf(metric, k, unit, c, t, alpha));
  let sequential: { value: SequentialResult | null; reason: string | null } = { value: null, reason: 'descriptive: the always-valid result is for the primary metric only' };
  if (primary) sequential = split(mixed ? { reason: MIXED_REASON } : sequentialOf(metric, k, unit, c, t, alpha, o));
  return {
    arm: t.arm,
    control: c.arm,
    metric,
    outcome_kind: metric === 'outcome' && kind !== 'mixed' ? kind : null,
    primary,
    label: metric === 'outcome' && kind === 'score' ? SCORE_LABEL : LABELS[metric],
    fixed: fixed.value === null ? null : { ...fixed.value, valid_when: FIXED_VALID_WHEN },
    fixed_reason: fixed.reason,
    sequential: sequential.value,
    sequential_reason: sequential.reason,
  };
}

const SECONDARY: readonly { metric: SecondaryMetric; sums: (c: ArmCounts) => [number, number] }[] = [
  { metric: 'stages_per_trajectory', sums: (c) => [c.stages, c.stagesSquared] },
  { metric: 'steps_per_trajectory', sums: (c) => [c.steps, c.stepsSquared] },
  // A share is a mean of 0/1 per trajectory: its sum of squares is its sum.
  { metric: 'env_error_share', sums: (c) => [c.envError, c.envError] },
  { metric: 'failure_reason_share', sums: (c) => [c.failureReason, c.failureReason] },
  { metric: 'error_candidate_share', sums: (c) => [c.errorCandidate, c.errorCandidate] },
];

export interface Analysis {
  comparisons: Comparison[];
  secondary: Secondary[];
  warnings: string[];
  /** Is outcome coverage the same in every arm (chi-square of matched / unmatched by arm)? null before any outcome. */
  outcome_coverage: { p_value: number; flagged: boolean } | null;
}

/** Comparisons of every member arm but the control against it; `arms` are the members, control among them. */
export function analyse(arms: readonly ArmInput[], control: string, o: AnalysisOptions): Analysis {
  const c = arms.find((a) => a.arm === control);
  const others = arms.filter((a) => a.arm !== control);
  const comparisons: Comparison[] = [];
  const secondary: Secondary[] = [];
  const warnings: string[] = [];
  if (c === undefined) return { comparisons, secondary, warnings, outcome_coverage: null };
  const alpha = perComparisonAlpha(ALPHA, arms.length);
  const other: Metric = o.primary === 'tool_success' ? 'outcome' : 'tool_success';
  const kind = outcomeKind(arms);
  for (const t of others) {
    comparisons.push(compare(o.primary, true, c, t, alpha, o, kind));
    comparisons.push(compare(other, false, c, t, alpha, o, kind));
    for (const s of SECONDARY) {
      const [cs, css] = s.sums(c.counts);
      const [ts, tss] = s.sums(t.counts);
      const r = split(fixedRatio(meanSums(c.counts.units, cs, css), meanSums(t.counts.units, ts, tss), alpha));
      secondary.push({ arm: t.arm, control: c.arm, metric: s.metric, fixed: r.value, fixed_reason: r.reason });
    }
  }
  warnings.push(...censoringWarnings(arms, o.primary));
  if (kind === 'mixed') warnings.push(`${MIXED_REASON}; reset the experiment and import one kind`);
  if (o.unit === 'key') warnings.push(...keyWarnings(arms));
  const few = arms.filter((a) => a.counts.units > 0 && a.counts.units < o.burnIn).map((a) => a.arm);
  if (few.length > 0) warnings.push(`few trajectories (under ${o.burnIn}) on ${few.join(', ')}: intervals there under-cover; no always-valid result yet`);
  const crossed = arms.filter((a) => a.counts.crossed > 0);
  for (const a of crossed) {
    warnings.push(`${a.counts.crossed} of ${a.counts.units} trajectories of ${a.arm} had a step served by another backend (crossover): they stay credited to ${a.arm}, which dilutes the difference toward 0`);
  }
  let outcomeCoverage: Analysis['outcome_coverage'] = null;
  if (kind !== null) {
    // A trajectory takes one outcome of one kind (a second is a conflict), so the two counts add up.
    const g = coverageHomogeneity(arms.map((a) => Math.min(a.counts.outcomeReported + a.counts.scoreN, a.counts.units)), arms.map((a) => a.counts.units));
    outcomeCoverage = { p_value: g.p_value, flagged: g.p_value < SRM_ALPHA };
    if (outcomeCoverage.flagged) {
      warnings.push(`outcome coverage differs between arms (p = ${g.p_value.toExponential(2)}): episodes were matched unevenly (see each arm's coverage), which biases the outcome comparison; check the import's ambiguous and unmatched counts`);
    }
  }
  if (arms.length > 2) warnings.push(`${arms.length} arms: each is compared with ${control} at alpha ${round4(alpha)} (Bonferroni over ${arms.length - 1} comparisons)`);
  return { comparisons, secondary, warnings, outcome_coverage: outcomeCoverage };
}

/** What a key-unit experiment must say: few keys (t with K - 2 df), keyless trajectories, keys past the bound. */
function keyWarnings(arms: readonly ArmInput[]): string[] {
  const out: string[] = [];
  const keys = arms.map((a) => keysOf(a).units);
  if (Math.min(...keys) < FEW_KEYS) {
    out.push(`few keys (${arms.map((a, i) => `${a.arm} ${keys[i] ?? 0}`).join(', ')}; under ${FEW_KEYS} in an arm): the key is the unit, so the fixed intervals and p-values are read from t with K - 2 df (K the keys of both arms with the metric) and are wide`);
  }
  const keyless = arms.reduce((x, a) => x + a.counts.keyless, 0);
  if (keyless > 0) out.push(`${keyless} trajectories had no value at the assign_by path: each was assigned on its own and is a unit by itself`);
  const over = arms.reduce((x, a) => x + a.counts.keysOver, 0);
  if (over > 0) out.push(`${over} trajectories belong to keys past experiments.max_keys: they are left out of the comparisons`);
  return out;
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/** What the gateway cannot see, said where it matters for the primary metric. */
function censoringWarnings(arms: readonly ArmInput[], primary: Metric): string[] {
  const out: string[] = [];
  const reported = arms.reduce((s, a) => s + a.counts.outcomeReported, 0);
  if (primary === 'tool_success') {
    out.push(
      'tool success is a process metric, not episode success: BENCH never reports the last decision of an episode, and at each stage boundary sends the next stage\'s instruction instead of the feedback, so stage-completing successes are hidden and agents that need few calls look worse',
    );
    const blind = arms.filter((a) => a.counts.units > 0 && a.counts.n === 0).map((a) => a.arm);
    if (blind.length > 0) {
      out.push(
        `no robot line was observed on ${blind.join(', ')}: tool success cannot rank the arms (an arm finishing each stage in one call, or never calling a tool, shows none); post episode outcomes (magma-gateway outcomes import <BENCH results dir>) and compare by episode success`,
      );
    }
    if (reported > 0) out.push('outcomes were posted, but the primary metric is tool_success: the outcome comparison is descriptive (set experiments.primary: outcome for the next experiment)');
  } else if (reported === 0) {
    out.push('the primary metric is episode success, and no outcome has been posted yet: run magma-gateway outcomes import <BENCH results dir>');
  }
  return out;
}

/**
 * The sample-ratio check of a split: trajectories assigned per member arm (once per (request_id, input id), after
 * rerouting; with assign_by, keys) against the weights, flagged at p < 0.001, with the reroutes as the cause the
 * gateway knows. The flag reads the chi-square p at every look, which inflates its false alarms above 0.1%
 * (docs/experiment-method.md#sample-ratio-mismatch-srm); the Dirichlet-multinomial p beside it is valid at any look.
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

/** The SRM warning line: the first line of the route's report when flagged. */
export function srmWarning(srm: Srm): string {
  const obs = Object.entries(srm.observed).map(([a, n]) => `${a} ${n}`).join(', ');
  const exp = Object.entries(srm.expected).map(([a, n]) => `${a} ${n}`).join(', ');
  const p = srm.p_value === null ? 'n/a' : srm.p_value.toExponential(2);
  return `sample-ratio mismatch (p = ${p}): ${srm.unit === 'key' ? 'keys' : 'trajectories'} ${obs}, expected ${exp}${srm.cause === null ? '' : `; cause: ${srm.cause}`}. The comparison is not trustworthy: do not stop on a win; fix the cause, then reset the experiment`;
}
