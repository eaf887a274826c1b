/**
 * The analysis of one experiment (docs/experiments.md; the method in docs/experiment-method.md): each non-control
 * arm against the control on the primary metric (fixed-horizon and always-valid, at α/(k-1)), the other outcome
 * metric and the secondary metrics descriptively, the sample-ratio check of a split, and the warnings a researcher
 * must read first. Pure: counts in, report pieces out, the statistics from src/stats.
 */
import {
  chiSquareGoodnessOfFit,
  coverageHomogeneity,
  fixedBinary,
  fixedRatio,
  meanSums,
  perComparisonAlpha,
  sequentialBinary,
  sequentialRatio,
  sequentialSrm,
  SRM_ALPHA,
  type FixedResult,
  type SequentialResult,
  type Unavailable,
} from '../stats/index.js';
import { toolSums, type ArmCounts } from './arm-counts.js';

export type Metric = 'tool_success' | 'outcome';
export type SecondaryMetric = 'stages_per_trajectory' | 'steps_per_trajectory' | 'env_error_share' | 'failure_reason_share' | 'error_candidate_share';

export const LABELS: Record<Metric, string> = {
  tool_success: 'process metric: tool success over observed robot lines, not episode success',
  outcome: 'episode success',
};

const ALPHA = 0.05;

export interface Comparison {
  arm: string;
  control: string;
  metric: Metric;
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
}

export interface AnalysisOptions {
  primary: Metric;
  plannedTrajectories: number;
  burnIn: number;
}

const FIXED_VALID_WHEN = 'valid only at a number of trajectories fixed in advance, read once';

function split<T extends object>(r: T | Unavailable): { value: T | null; reason: string | null } {
  return 'reason' in r ? { value: null, reason: r.reason } : { value: r, reason: null };
}

function binary(c: ArmCounts): { units: number; successes: number } {
  return { units: c.outcomeReported, successes: c.outcomeSuccess };
}

/** One metric's comparison of `t` against `c`; the always-valid part for the primary metric only. */
/** The fixed tool-success comparison, shown once each arm has 2 trajectories with a robot line. */
function fixedTool(c: ArmCounts, t: ArmCounts, alpha: number): FixedResult | Unavailable {
  if (c.unitsWithLines < 2 || t.unitsWithLines < 2) return { reason: 'needs 2 trajectories with a robot line per arm' };
  return fixedRatio(toolSums(c), toolSums(t), alpha);
}

function compare(metric: Metric, primary: boolean, c: ArmInput, t: ArmInput, alpha: number, o: AnalysisOptions): Comparison {
  const fixed = split(metric === 'tool_success' ? fixedTool(c.counts, t.counts, alpha) : fixedBinary(binary(c.counts), binary(t.counts), alpha));
  let sequential: { value: SequentialResult | null; reason: string | null } = { value: null, reason: 'descriptive: the always-valid result is for the primary metric only' };
  if (primary) {
    const opts = { alpha, plannedTrajectories: o.plannedTrajectories, burnIn: o.burnIn };
    sequential = split(metric === 'tool_success' ? sequentialRatio(toolSums(c.counts), toolSums(t.counts), opts) : sequentialBinary(binary(c.counts), binary(t.counts), opts));
  }
  return {
    arm: t.arm,
    control: c.arm,
    metric,
    primary,
    label: LABELS[metric],
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
  for (const t of others) {
    comparisons.push(compare(o.primary, true, c, t, alpha, o));
    comparisons.push(compare(other, false, c, t, alpha, o));
    for (const s of SECONDARY) {
      const [cs, css] = s.sums(c.counts);
      const [ts, tss] = s.sums(t.counts);
      const r = split(fixedRatio(meanSums(c.counts.units, cs, css), meanSums(t.counts.units, ts, tss), alpha));
      secondary.push({ arm: t.arm, control: c.arm, metric: s.metric, fixed: r.value, fixed_reason: r.reason });
    }
  }
  warnings.push(...censoringWarnings(arms, o.primary));
  const few = arms.filter((a) => a.counts.units > 0 && a.counts.units < o.burnIn).map((a) => a.arm);
  if (few.length > 0) warnings.push(`few trajectories (under ${o.burnIn}) on ${few.join(', ')}: intervals there under-cover; no always-valid result yet`);
  const crossed = arms.filter((a) => a.counts.crossed > 0);
  for (const a of crossed) {
    warnings.push(`${a.counts.crossed} of ${a.counts.units} trajectories of ${a.arm} had a step served by another backend (crossover): they stay credited to ${a.arm}, which dilutes the difference toward 0`);
  }
  let outcomeCoverage: Analysis['outcome_coverage'] = null;
  if (arms.some((a) => a.counts.outcomeReported > 0)) {
    const g = coverageHomogeneity(arms.map((a) => Math.min(a.counts.outcomeReported, a.counts.units)), arms.map((a) => a.counts.units));
    outcomeCoverage = { p_value: g.p_value, flagged: g.p_value < SRM_ALPHA };
    if (outcomeCoverage.flagged) {
      warnings.push(`outcome coverage differs between arms (p = ${g.p_value.toExponential(2)}): episodes were matched unevenly (see each arm's coverage), which biases the outcome comparison; check the import's ambiguous and unmatched counts`);
    }
  }
  if (arms.length > 2) warnings.push(`${arms.length} arms: each is compared with ${control} at alpha ${round4(alpha)} (Bonferroni over ${arms.length - 1} comparisons)`);
  return { comparisons, secondary, warnings, outcome_coverage: outcomeCoverage };
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
 * rerouting) against the weights, flagged at p < 0.001, with the reroutes as the cause the gateway knows.
 */
export function sampleRatio(arms: readonly ArmInput[]): Srm {
  const observed = Object.fromEntries(arms.map((a) => [a.arm, a.counts.units]));
  const total = arms.reduce((s, a) => s + a.counts.units, 0);
  const weightSum = arms.reduce((s, a) => s + a.weight, 0);
  const expected = Object.fromEntries(arms.map((a) => [a.arm, Math.round((total * a.weight * 1000) / weightSum) / 1000]));
  if (total === 0 || arms.length < 2) return { observed, expected, p_value: null, sequential_p_value: null, flagged: false, cause: null };
  const obs = arms.map((a) => a.counts.units);
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
  return `sample-ratio mismatch (p = ${p}): trajectories ${obs}, expected ${exp}${srm.cause === null ? '' : `; cause: ${srm.cause}`}. The comparison is not trustworthy: do not stop on a win; fix the cause, then reset the experiment`;
}
