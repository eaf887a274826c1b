/** Store keys of the experiment recorder; each carries the experiment id, so experiments of a route never sum. */
import { isJsonObject, parseJsonOrUndefined } from '../protocol/schemas.js';
import type { JsonObject } from '../protocol/types.js';

export function countersKey(agent: string, route: string, experiment: string): string {
  return `experiments:${agent}/${route}/${experiment}`;
}

/** assign_by: per-key sums (keyField) and `keys`, apart from the arm counters so those stay small. */
export function keyCountersKey(agent: string, route: string, experiment: string): string {
  return `${countersKey(agent, route, experiment)}/keys`;
}

/** What a per-key field sums: trajectories, s, n, outcomes reported / successes, scores posted / their sum. */
export const KEY_SUMS = ['t', 's', 'n', 'ocr', 'ocs', 'scn', 'scs'] as const;
export type KeySum = (typeof KEY_SUMS)[number];

export function keyField(arm: string, stratum: number, key: string, what: KeySum): string {
  return `${arm}|${stratum}|${key}|${what}`;
}

export function boundCountersKey(agent: string, route: string, experiment: string): string {
  return `${countersKey(agent, route, experiment)}/bound`;
}

export const OUTCOME_COUNTERS_KEY = 'experiments:outcomes';

/** Key by key in docs/experiments.md#what-the-gateway-stores. */
export const keys = {
  step: (trajectory: string, step: number) => `x:step:${trajectory}:${step}`,
  trajectory: (trajectory: string) => `x:traj:${trajectory}`,
  replayOf: (trajectory: string) => `x:replay:${trajectory}`,
  superseded: (trajectory: string) => `x:sup:${trajectory}`,
  outcome: (trajectory: string) => `x:outcome:${trajectory}`,
  episodeOutcome: (experiment: string, hash: string, episode: string) => `x:outcome-ep:${experiment}:${hash}:${episode}`,
  experiment: (experiment: string) => `x:exp:${experiment}`,
  crossed: (experiment: string, arm: string) => `x:crossed:${experiment}:${arm}`,
  hash: (hash: string) => `x:hash:${hash}`,
  steps: (trajectory: string) => `x:steps:${trajectory}`,
  trajectories: (experiment: string) => `x:trajs:${experiment}`,
  list: (agent: string, route: string) => `x:list:${agent}/${route}`,
  slot: (experiment: string, slot: number) => `x:slot:${experiment}:${slot}`,
  key: (experiment: string, key: string) => `x:key:${experiment}:${key}`,
  epoch: (agent: string, route: string) => `experiments:epoch:${agent}/${route}`,
};

export const EPOCH_PREFIX = 'experiments:epoch:';

/**
 * Field suffixes (`<arm>|<suffix>`, docs/experiments.md#what-each-number-means). Arm names cannot hold `|` (config
 * names are [A-Za-z0-9_.-]), so the first `|` splits a field back even when a backend's error code holds one.
 */
export const SCALAR_FIELDS = {
  units: 'units', unitsWithLines: 'units_lines', s: 's', n: 'n', ss: 'ss', nn: 'nn', sn: 'sn', steps: 'steps',
  stepsSquared: 'steps_sq', stages: 'stages', stagesSquared: 'stages_sq', envError: 'env_error',
  failureReason: 'failure_reason', errorCandidate: 'error_candidate', crossed: 'crossed', cached: 'cached_steps',
  replays: 'replays', superseded: 'superseded', rejectedTags: 'rejected_tags', completed: 'completed', error: 'error',
  failedCalls: 'calls_failed', outcomeReported: 'oc_reported', outcomeSuccess: 'oc_success', scoreN: 'oc_score_n',
  scoreSum: 'oc_score_sum', scoreSquares: 'oc_score_ss', keyless: 'keyless', keysOver: 'keys_over', leftOut: 'left_out',
  hashOver: 'hash_over', exportOver: 'export_over', stepsOver: 'steps_over',
} as const;
export type ScalarCount = keyof typeof SCALAR_FIELDS;

export const field = {
  count: (arm: string, what: ScalarCount) => `${arm}|${SCALAR_FIELDS[what]}`,
  rerouted: (arm: string, why: 'not_ready' | 'ejected') => `${arm}|rerouted|${why}`,
  code: (arm: string, code: string) => `${arm}|code|${code}`,
  feedback: (arm: string, outcome: string) => `${arm}|fb|${outcome}`,
  latency: (arm: string, bucket: number) => `${arm}|lat|${bucket}`,
  inStratum: (stratum: number, f: string) => {
    const bar = f.indexOf('|');
    return `${f.slice(0, bar)}|st|${stratum}|${f.slice(bar + 1)}`;
  },
};

/** What `x:traj:<id>` holds: enough to credit an outcome to its arm. */
export interface TrajectoryRecord {
  agent: string;
  route: string;
  experiment: string;
  arm: string;
  started_at: string;
  /** 0 = other. */
  stratum?: number;
  /** The assign_by key id, when the key is a unit of its own. */
  key?: string;
}

const KEY_ID = /^[0-9a-f]{16}$/;

function parseObject(raw: string | undefined): JsonObject | undefined {
  const v = raw === undefined ? undefined : parseJsonOrUndefined(raw);
  return isJsonObject(v) ? v : undefined;
}

export function parseTrajectoryRecord(raw: string | undefined): TrajectoryRecord | undefined {
  const v = parseObject(raw);
  if (v === undefined) return undefined;
  const { agent, route, experiment, arm, started_at: started, stratum, key } = v;
  if (typeof agent !== 'string' || typeof route !== 'string' || typeof experiment !== 'string' || typeof arm !== 'string') return undefined;
  const rec: TrajectoryRecord = { agent, route, experiment, arm, started_at: String(started) };
  if (typeof stratum === 'number' && Number.isInteger(stratum) && stratum >= 0) rec.stratum = stratum;
  if (typeof key === 'string' && KEY_ID.test(key)) rec.key = key;
  return rec;
}

export function parseExperimentRecord(raw: string | undefined): ExperimentRecord | undefined {
  const v = parseObject(raw);
  if (v === undefined || typeof v.started_at !== 'string') return undefined;
  return { agent: String(v.agent), route: String(v.route), name: typeof v.name === 'string' ? v.name : null, started_at: v.started_at };
}

/** What `x:exp:<id>` holds. */
export interface ExperimentRecord {
  agent: string;
  route: string;
  name: string | null;
  started_at: string;
}
