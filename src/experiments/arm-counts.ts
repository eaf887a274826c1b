/**
 * An experiment's counters (recorder.ts, fields in keys.ts) read back per arm, and each arm's report object
 * (docs/experiments.md#what-each-number-means). Pure: the report reads the store, this only adds up.
 */
import { ratioEstimate, wilson, zCritical, type RatioSums } from '../stats/index.js';
import { emptyFeedback, FEEDBACK_OUTCOMES, type FeedbackCounts, type FeedbackOutcome } from './feedback.js';
import { bucketQuantile } from './latency.js';

export interface ArmCounts {
  units: number;
  unitsWithLines: number;
  s: number;
  n: number;
  ss: number;
  nn: number;
  sn: number;
  steps: number;
  stepsSquared: number;
  stages: number;
  stagesSquared: number;
  envError: number;
  failureReason: number;
  errorCandidate: number;
  crossed: number;
  cached: number;
  replays: number;
  superseded: number;
  rejectedTags: number;
  rerouted: { not_ready: number; ejected: number };
  completed: number;
  error: number;
  codes: Map<string, number>;
  feedback: FeedbackCounts;
  latency: Map<number, number>;
  /** Of the latency samples, those of sub-requests that failed or timed out; absent: none. */
  failedCalls?: number;
  outcomeReported: number;
  outcomeSuccess: number;
  scoreN: number;
  scoreSum: number;
  scoreSquares: number;
  /** assign_by: trajectories with no key (their own units), and of keys past experiments.max_keys (left out). */
  keyless: number;
  keysOver: number;
  /** Trajectories started after experiments.max_trajectories: left out of everything else. */
  leftOut: number;
  /** Index writes past an index bound (step-index.ts): trace-hash candidates, export rows, steps per trajectory. */
  hashOver: number;
  exportOver: number;
  stepsOver: number;
  /** The unit and outcome sums per stratum slot (0 = other), on a stratified experiment. */
  strata: Map<number, ArmCounts>;
}

export function emptyArm(): ArmCounts {
  return {
    units: 0, unitsWithLines: 0, s: 0, n: 0, ss: 0, nn: 0, sn: 0, steps: 0, stepsSquared: 0, stages: 0, stagesSquared: 0, envError: 0,
    failureReason: 0, errorCandidate: 0, crossed: 0, cached: 0, replays: 0, superseded: 0, rejectedTags: 0, rerouted: { not_ready: 0, ejected: 0 }, completed: 0,
    error: 0, codes: new Map(), feedback: emptyFeedback(), latency: new Map(), outcomeReported: 0, outcomeSuccess: 0,
    scoreN: 0, scoreSum: 0, scoreSquares: 0, keyless: 0, keysOver: 0, leftOut: 0, hashOver: 0, exportOver: 0, stepsOver: 0, strata: new Map(),
  };
}

type Scalar = Exclude<keyof ArmCounts, 'rerouted' | 'codes' | 'feedback' | 'latency' | 'strata'>;

/** Field suffix (after `<arm>|`) -> the count it adds to. */
const SCALARS: Record<string, Scalar> = {
  units: 'units', units_lines: 'unitsWithLines', s: 's', n: 'n', ss: 'ss', nn: 'nn', sn: 'sn', steps: 'steps', steps_sq: 'stepsSquared',
  stages: 'stages', stages_sq: 'stagesSquared', env_error: 'envError', failure_reason: 'failureReason',
  error_candidate: 'errorCandidate', crossed: 'crossed', cached_steps: 'cached', replays: 'replays', superseded: 'superseded', rejected_tags: 'rejectedTags', completed: 'completed',
  error: 'error', oc_reported: 'outcomeReported', oc_success: 'outcomeSuccess',
  oc_score_n: 'scoreN', oc_score_sum: 'scoreSum', oc_score_ss: 'scoreSquares', keyless: 'keyless', keys_over: 'keysOver',
  left_out: 'leftOut', hash_over: 'hashOver', export_over: 'exportOver', steps_over: 'stepsOver',
};

const STRATUM_FIELD = /^st\|(\d{1,4})\|(.+)$/;

/** The scalar a field suffix adds to, if it is one. */
function scalarOf(rest: string): Scalar | undefined {
  return Object.hasOwn(SCALARS, rest) ? SCALARS[rest] : undefined;
}

function feedbackOutcome(name: string): FeedbackOutcome | undefined {
  return FEEDBACK_OUTCOMES.find((o) => o === name);
}

/** Counter fields (`<arm>|<what>[|<detail>]`) back into per-arm counts. */
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
    const scalar = scalarOf(rest);
    const stratum = STRATUM_FIELD.exec(rest);
    const fb = rest.startsWith('fb|') ? feedbackOutcome(rest.slice(3)) : undefined;
    if (scalar !== undefined) a[scalar] += v;
    else if (stratum !== null) {
      const [, slot = '', what = ''] = stratum; // both groups always match
      const inner = scalarOf(what);
      let h = a.strata.get(Number(slot));
      if (h === undefined) a.strata.set(Number(slot), (h = emptyArm()));
      if (inner !== undefined) h[inner] += v;
    } else if (fb !== undefined) a.feedback[fb] += v;
    else if (rest === 'rerouted|not_ready') a.rerouted.not_ready += v;
    else if (rest === 'rerouted|ejected') a.rerouted.ejected += v;
    else if (rest === 'calls_failed') a.failedCalls = (a.failedCalls ?? 0) + v;
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
  /** Trajectories answered wholly from the cache as replays of this arm's: counted once, as the original. */
  replays: number;
  /** This arm's trajectories a resumed one took over: not units (docs/experiments.md#replays-and-resumed-episodes). */
  superseded: number;
  /** Inputs whose memory tag was not trusted and that started a new trajectory here (docs/experiments.md#signed-tags). */
  rejected_tags: number;
  rerouted_from: { not_ready: number; ejected: number };
  candidates: { completed: number; error: number };
  error_codes: Record<string, number>;
  feedback: FeedbackCounts;
  /**
   * The sub-requests that served the arm's steps, one sample per step leg, failed and timed-out ones included
   * (`failed`, `failed_share`), so a timeout shows in p95 as on the Backends page.
   */
  latency_ms: { samples: number; p50: number | null; p95: number | null; failed: number; failed_share: number | null };
  /** What `error_candidate_share` is a share of: a split arm's trajectories, or an ensemble member's own candidates. */
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
  let samples = 0;
  for (const v of c.latency.values()) samples += v;
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
      failed: c.failedCalls ?? 0,
      failed_share: share(c.failedCalls ?? 0, samples),
    },
    error_candidate_share_of: 'trajectories',
  };
}
