/** An experiment's counters read back per arm, and each arm's report (docs/experiments.md#what-each-number-means). */
import { ratioEstimate, wilson, zCritical, type RatioSums } from '../stats/index.js';
import { SCALAR_FIELDS, type ScalarCount } from './keys.js';
import { emptyFeedback, FEEDBACK_OUTCOMES, type FeedbackCounts, type FeedbackOutcome } from './feedback.js';
import { bucketQuantile } from './latency.js';

export interface ArmCounts extends Record<ScalarCount, number> {
  rerouted: { not_ready: number; ejected: number };
  codes: Map<string, number>;
  feedback: FeedbackCounts;
  latency: Map<number, number>;
  /** The unit and outcome sums per stratum slot (0 = other), on a stratified experiment. */
  strata: Map<number, ArmCounts>;
}

const ZEROS = Object.fromEntries(Object.keys(SCALAR_FIELDS).map((k) => [k, 0])) as Record<ScalarCount, number>; // every key

export function emptyArm(): ArmCounts {
  return { ...ZEROS, rerouted: { not_ready: 0, ejected: 0 }, codes: new Map(), feedback: emptyFeedback(), latency: new Map(), strata: new Map() };
}

/** Field suffix (after `<arm>|`) -> the count it adds to. */
const SCALARS = new Map<string, ScalarCount>(
  Object.entries(SCALAR_FIELDS).map(([count, suffix]) => [suffix, count as ScalarCount]), // keys of SCALAR_FIELDS
);

const STRATUM_FIELD = /^st\|(\d{1,4})\|(.+)$/;

function feedbackOutcome(name: string): FeedbackOutcome | undefined {
  return FEEDBACK_OUTCOMES.find((o) => o === name);
}

export function parseCounters(counters: Record<string, number>): Map<string, ArmCounts> {
  const arms = new Map<string, ArmCounts>();
  for (const [f, v] of Object.entries(counters)) {
    if (!Number.isFinite(v) || v === 0) continue;
    const bar = f.indexOf('|');
    if (bar <= 0) continue;
    const armName = f.slice(0, bar);
    const rest = f.slice(bar + 1);
    let a = arms.get(armName);
    if (a === undefined) arms.set(armName, (a = emptyArm()));
    const scalar = SCALARS.get(rest);
    const stratum = STRATUM_FIELD.exec(rest);
    const fb = rest.startsWith('fb|') ? feedbackOutcome(rest.slice(3)) : undefined;
    if (scalar !== undefined) a[scalar] += v;
    else if (stratum !== null) {
      const [, slot = '', what = ''] = stratum; // both groups always match
      const inner = SCALARS.get(what);
      let h = a.strata.get(Number(slot));
      if (h === undefined) a.strata.set(Number(slot), (h = emptyArm()));
      if (inner !== undefined) h[inner] += v;
    } else if (fb !== undefined) a.feedback[fb] += v;
    else if (rest === 'rerouted|not_ready') a.rerouted.not_ready += v;
    else if (rest === 'rerouted|ejected') a.rerouted.ejected += v;
    else if (rest.startsWith('code|')) a.codes.set(rest.slice(5), (a.codes.get(rest.slice(5)) ?? 0) + v);
    else if (rest.startsWith('lat|')) {
      const b = Number(rest.slice(4));
      if (Number.isInteger(b) && b >= 0) a.latency.set(b, (a.latency.get(b) ?? 0) + v);
    }
  }
  return arms;
}

export function toolSums(c: ArmCounts): RatioSums {
  return { units: c.units, s: c.s, n: c.n, ss: c.ss, nn: c.nn, sn: c.sn };
}

export interface ArmReport {
  arm: string;
  weight: number;
  member: boolean;
  trajectories: number;
  steps: number;
  tool_success: { successes: number; lines: number; rate: number | null; ci95: [number, number] | null; ci95_reason: string | null };
  outcomes: {
    reported: number; successes: number; rate: number | null; ci95: [number, number] | null; coverage: number | null;
    score_mean: number | null;
  };
  stages_per_trajectory: number | null;
  steps_per_trajectory: number | null;
  env_error_share: number | null;
  failure_reason_share: number | null;
  error_candidate_share: number | null;
  crossover: { trajectories: number; share: number | null; since: string | null };
  cached_steps: number;
  replays: number;
  superseded: number;
  rejected_tags: number;
  rerouted_from: { not_ready: number; ejected: number };
  candidates: { completed: number; error: number };
  error_codes: Record<string, number>;
  feedback: FeedbackCounts;
  /** Failed and timed-out sub-requests included, so a timeout shows in p95 as on the Backends page. */
  latency_ms: { samples: number; p50: number | null; p95: number | null; failed: number; failed_share: number | null };
  error_candidate_share_of: 'trajectories' | 'candidates';
}

export function round(x: number | undefined, digits: number): number | null {
  if (x === undefined || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function share(x: number, of: number): number | null {
  return of > 0 ? x / of : null;
}

export function armReport(arm: string, weight: number, member: boolean, c: ArmCounts, crossedSince: string | null): ArmReport {
  const est = ratioEstimate(toolSums(c));
  let ci: [number, number] | null = null;
  if (est !== undefined && est.variance > 0) {
    const h = zCritical(0.05) * Math.sqrt(est.variance);
    ci = [Math.max(0, est.rate - h), Math.min(1, est.rate + h)];
  }
  const samples = [...c.latency.values()].reduce((n, v) => n + v, 0);
  return {
    arm,
    weight,
    member,
    trajectories: c.units,
    steps: c.steps,
    tool_success: {
      successes: c.s,
      lines: c.n,
      rate: share(c.s, c.n),
      ci95: ci,
      ci95_reason: ci !== null ? null : 'needs 2 trajectories with a robot line and some variation between them',
    },
    outcomes: {
      reported: c.outcomeReported,
      successes: c.outcomeSuccess,
      rate: share(c.outcomeSuccess, c.outcomeReported),
      ci95: wilson(c.outcomeSuccess, c.outcomeReported) ?? null,
      coverage: share(c.outcomeReported, c.units),
      score_mean: share(c.scoreSum, c.scoreN),
    },
    stages_per_trajectory: share(c.stages, c.units),
    steps_per_trajectory: share(c.steps, c.units),
    env_error_share: share(c.envError, c.units),
    failure_reason_share: share(c.failureReason, c.units),
    error_candidate_share: share(c.errorCandidate, c.units),
    crossover: { trajectories: c.crossed, share: share(c.crossed, c.units), since: crossedSince },
    cached_steps: c.cached,
    replays: c.replays,
    superseded: c.superseded,
    rejected_tags: c.rejectedTags,
    rerouted_from: { ...c.rerouted },
    candidates: { completed: c.completed, error: c.error },
    error_codes: Object.fromEntries([...c.codes].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))),
    feedback: c.feedback,
    latency_ms: {
      samples,
      p50: round(bucketQuantile(c.latency, 0.5), 1),
      p95: round(bucketQuantile(c.latency, 0.95), 1),
      failed: c.failedCalls,
      failed_share: share(c.failedCalls, samples),
    },
    error_candidate_share_of: 'trajectories',
  };
}
