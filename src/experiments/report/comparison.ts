/**
 * One metric's comparison of an arm against the control (docs/experiment-method.md), with the trajectory or the
 * assign_by key as the unit; the always-valid result for the primary metric only.
 */
import {
  BINARY_UNIT,
  clampResult,
  EMPTY_SUMS,
  fixedBinary,
  fixedMeans,
  fixedRatio,
  meanSums,
  sequentialBinary,
  sequentialMeans,
  sequentialRatio,
  RATE_DIFFERENCE_RANGE,
  type FixedResult,
  type Range,
  type RatioSums,
  type ScoreSums,
  type SequentialResult,
  type Unavailable,
  type Unit,
} from '../../stats/index.js';
import { toolSums, type ArmCounts } from '../arm-counts.js';
import type { KeyUnits } from '../units.js';

export type Metric = 'tool_success' | 'outcome';

export type OutcomeKind = 'success' | 'score';

export const LABELS: Record<Metric, string> = {
  tool_success: 'process metric: tool success over observed robot lines, not episode success',
  outcome: 'episode success',
};
const SCORE_LABEL = 'episode score (mean per unit)';
export const MIXED_REASON = 'both success and score outcomes were posted to this experiment: they are not compared together (post one kind per experiment)';

export interface Comparison {
  arm: string;
  control: string;
  metric: Metric;
  /** Null before any outcome, or when both kinds were posted. */
  outcome_kind: OutcomeKind | null;
  primary: boolean;
  label: string;
  fixed: (FixedResult & { valid_when: string }) | null;
  fixed_reason: string | null;
  sequential: SequentialResult | null;
  sequential_reason: string | null;
}

export interface ArmInput {
  arm: string;
  weight: number;
  counts: ArmCounts;
  /** Absent when the unit is the trajectory. */
  keys?: KeyUnits;
}

export interface AnalysisOptions {
  primary: Metric;
  plannedTrajectories: number;
  burnIn: number;
  /** Default: the trajectory. */
  unit?: Unit;
}

const NO_KEYS: KeyUnits = Object.freeze({ units: 0, tool: EMPTY_SUMS, success: EMPTY_SUMS, score: EMPTY_SUMS });

export function keysOf(a: ArmInput): KeyUnits {
  return a.keys ?? NO_KEYS;
}

function scoreSums(c: ArmCounts): ScoreSums {
  return { units: c.scoreN, sum: c.scoreSum, squares: c.scoreSquares };
}

export function outcomeKind(arms: readonly ArmInput[]): OutcomeKind | 'mixed' | null {
  const success = arms.some((a) => a.counts.outcomeReported > 0);
  const score = arms.some((a) => a.counts.scoreN > 0);
  return success && score ? 'mixed' : score ? 'score' : success ? 'success' : null;
}

/** A success or score with the trajectory as unit is a mean (n = 1 each). */
export function metricSums(metric: Metric, kind: OutcomeKind, unit: Unit, a: ArmInput): RatioSums {
  const k = keysOf(a);
  if (metric === 'tool_success') return unit === 'key' ? k.tool : toolSums(a.counts);
  if (kind === 'score') return unit === 'key' ? k.score : meanSums(a.counts.scoreN, a.counts.scoreSum, a.counts.scoreSquares);
  return unit === 'key' ? k.success : meanSums(a.counts.outcomeReported, a.counts.outcomeSuccess, a.counts.outcomeSuccess);
}

/** What the always-valid burn-in of `metric` counts, named as a researcher counts it. */
export function burnInUnit(metric: Metric, kind: OutcomeKind, unit: Unit): string {
  if (unit === 'key') return metric === 'tool_success' ? 'keys' : kind === 'score' ? 'keys with a score' : 'keys with an outcome';
  if (metric === 'tool_success') return 'trajectories';
  return kind === 'score' ? 'trajectories with a score' : BINARY_UNIT;
}

const FIXED_VALID_WHEN = 'valid only at a number of trajectories fixed in advance, read once';

export function split<T extends object>(r: T | Unavailable): { value: T | null; reason: string | null } {
  return 'reason' in r ? { value: null, reason: r.reason } : { value: r, reason: null };
}

function binary(c: ArmCounts): { units: number; successes: number } {
  return { units: c.outcomeReported, successes: c.outcomeSuccess };
}

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
    return sequentialRatio(metricSums(metric, kind, unit, c), metricSums(metric, kind, unit, t), opts, 'keys', metric === 'tool_success' ? 'with a tool line' : outcomeWhat(kind), burnInUnit(metric, kind, unit));
  }
  if (metric === 'tool_success') return sequentialRatio(toolSums(c.counts), toolSums(t.counts), opts);
  if (kind === 'score') return sequentialMeans(scoreSums(c.counts), scoreSums(t.counts), opts);
  return sequentialBinary(binary(c.counts), binary(t.counts), opts);
}

/** The range a metric's difference cannot leave: rates differ by at most 1; a score has no bound the gateway knows. */
export function differenceRange(metric: Metric, kind: OutcomeKind | 'mixed' | null): Range | null {
  return metric === 'outcome' && kind === 'score' ? null : RATE_DIFFERENCE_RANGE;
}

function inRange<T extends { ci95: [number, number] }>(r: T | Unavailable, range: Range | null): T | Unavailable {
  return 'reason' in r ? r : clampResult(r, range);
}

export function compare(metric: Metric, primary: boolean, c: ArmInput, t: ArmInput, alpha: number, o: AnalysisOptions, kind: OutcomeKind | 'mixed' | null): Comparison {
  const unit = o.unit ?? 'trajectory';
  const k: OutcomeKind = kind === 'score' ? 'score' : 'success';
  const mixed = metric === 'outcome' && kind === 'mixed';
  const range = differenceRange(metric, kind);
  const fixed = split(mixed ? { reason: MIXED_REASON } : inRange(fixedOf(metric, k, unit, c, t, alpha), range));
  let sequential: { value: SequentialResult | null; reason: string | null } = { value: null, reason: 'descriptive: the always-valid result is for the primary metric only' };
  if (primary) sequential = split(mixed ? { reason: MIXED_REASON } : inRange(sequentialOf(metric, k, unit, c, t, alpha, o), range));
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
