/**
 * The analysis of one experiment (docs/experiments.md; the method in docs/experiment-method.md): each non-control
 * arm against the control, the secondary metrics, and the warnings a researcher must read first.
 */
import { clampResult, coverageHomogeneity, FEW_KEYS, fixedRatio, meanSums, perComparisonAlpha, RATE_DIFFERENCE_RANGE, SRM_ALPHA, type FixedResult, type Range } from '../../stats/index.js';
import { round, type ArmCounts } from '../arm-counts.js';
import { compare, keysOf, MIXED_REASON, outcomeKind, split, type AnalysisOptions, type ArmInput, type Comparison, type Metric } from './comparison.js';

export type SecondaryMetric = 'stages_per_trajectory' | 'steps_per_trajectory' | 'env_error_share' | 'failure_reason_share' | 'error_candidate_share';

const ALPHA = 0.05;

/** Under this share of trajectories with an outcome, the report says so (still running, or results not imported). */
const LOW_COVERAGE = 0.9;

export interface Secondary {
  arm: string;
  control: string;
  metric: SecondaryMetric;
  fixed: FixedResult | null;
  fixed_reason: string | null;
}

/** Each secondary metric's per-trajectory sums, and the range its difference cannot leave. */
const SECONDARY: readonly { metric: SecondaryMetric; sums: (c: ArmCounts) => [number, number]; range: Range | null }[] = [
  { metric: 'stages_per_trajectory', sums: (c) => [c.stages, c.stagesSquared], range: null },
  { metric: 'steps_per_trajectory', sums: (c) => [c.steps, c.stepsSquared], range: null },
  // A share is a mean of 0/1 per trajectory: its sum of squares is its sum, and two shares differ by at most 1.
  { metric: 'env_error_share', sums: (c) => [c.envError, c.envError], range: RATE_DIFFERENCE_RANGE },
  { metric: 'failure_reason_share', sums: (c) => [c.failureReason, c.failureReason], range: RATE_DIFFERENCE_RANGE },
  { metric: 'error_candidate_share', sums: (c) => [c.errorCandidate, c.errorCandidate], range: RATE_DIFFERENCE_RANGE },
];

export interface Analysis {
  comparisons: Comparison[];
  secondary: Secondary[];
  warnings: string[];
  /** Chi-square of matched / unmatched by arm; null before any outcome. */
  outcome_coverage: { p_value: number; flagged: boolean } | null;
}

/** `arms` are the members, control among them. */
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
      const f = fixedRatio(meanSums(c.counts.units, cs, css), meanSums(t.counts.units, ts, tss), alpha);
      const r = split('reason' in f ? f : clampResult(f, s.range));
      secondary.push({ arm: t.arm, control: c.arm, metric: s.metric, fixed: r.value, fixed_reason: r.reason });
    }
  }
  warnings.push(...censoringWarnings(arms, o.primary));
  if (kind === 'mixed') warnings.push(`${MIXED_REASON}; reset the experiment and import one kind`);
  if (o.unit === 'key') warnings.push(...keyWarnings(arms));
  const few = arms.filter((a) => a.counts.units > 0 && a.counts.units < o.burnIn).map((a) => a.arm);
  if (few.length > 0) warnings.push(`few trajectories (under ${o.burnIn}) on ${few.join(', ')}: intervals there under-cover; no always-valid result yet`);
  for (const a of arms.filter((x) => x.counts.crossed > 0)) {
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
    const units = arms.reduce((n, a) => n + a.counts.units, 0);
    const covered = arms.reduce((n, a) => n + Math.min(a.counts.outcomeReported + a.counts.scoreN, a.counts.units), 0);
    if (units > 0 && covered < LOW_COVERAGE * units) {
      warnings.push(`${units - covered} of ${units} trajectories have no outcome (coverage ${round((100 * covered) / units, 1)}%): the outcome comparison reads only the episodes imported; import every run's results (episodes still running have none yet)`);
    }
  }
  if (arms.length > 2) warnings.push(`${arms.length} arms: each is compared with ${control} at alpha ${round(alpha, 4)} (Bonferroni over ${arms.length - 1} comparisons)`);
  return { comparisons, secondary, warnings, outcome_coverage: outcomeCoverage };
}

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
