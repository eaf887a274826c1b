/**
 * Episode outcomes (docs/experiments.md#outcomes-from-bench): `POST /gateway/experiments/outcomes` credits each outcome to
 * the arm its trajectory was assigned, once. An outcome names its trajectory by id (from the memory tag) or by the
 * trace hash of its episode (what `magma-gateway outcomes import` computes from BENCH's results).
 *
 * - Idempotent per trajectory: the first outcome is kept (a set-once mark); the same again is a `duplicate`, a
 *   different one a `conflict`, rejected and counted, never overwriting.
 * - An unknown trajectory or a hash the gateway never saw is counted (`unknown`, `unmatched`) and ignored.
 * - A hash several trajectories ended with (one-step episodes of one task, deterministic agents) is credited at arm
 *   level when they all sit in one arm of one experiment (`arm_level`, once per episode), and otherwise counted as
 *   `ambiguous`, never guessed.
 */
import type { Claims, Counters } from '../state/types.js';
import { isJsonObject } from '../protocol/schemas.js';
import { countersKey, field, keyCountersKey, keyField, keys, OUTCOME_COUNTERS_KEY, parseTrajectoryRecord, type KeySum, type TrajectoryRecord } from './keys.js';

export type Outcome = { success: boolean } | { score: number };
export type OutcomeItem =
  | { trajectory: string; outcome: Outcome }
  | { traceHash: string; episode: string; outcome: Outcome };

export const OUTCOME_RESULTS = ['accepted', 'duplicate', 'conflict', 'unknown', 'arm_level', 'ambiguous', 'unmatched'] as const;
export type OutcomeResult = (typeof OUTCOME_RESULTS)[number];

export interface OutcomeSummary {
  received: number;
  results: Record<OutcomeResult, number>;
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const MAX_EPISODE_CHARS = 500;

function at(i: number, what: string): string {
  return `outcomes[${i}]: ${what}`;
}

/**
 * The outcomes of a body, or the first problem with its location. Bounded: at most `max` outcomes, each checked
 * in constant work.
 */
export function parseOutcomes(body: unknown, max: number): { ok: true; items: OutcomeItem[] } | { ok: false; problem: string } {
  if (!isJsonObject(body)) return { ok: false, problem: 'the body must be a JSON object {"outcomes": [...]}' };
  const list = body.outcomes;
  if (!Array.isArray(list)) return { ok: false, problem: 'outcomes: expected a list' };
  if (list.length > max) return { ok: false, problem: `outcomes: ${list.length} outcomes, more than experiments.outcomes_max (${max}); post them in parts` };
  const items: OutcomeItem[] = [];
  for (let i = 0; i < list.length; i++) {
    const r: unknown = list[i];
    if (!isJsonObject(r)) return { ok: false, problem: at(i, 'expected an object') };
    let outcome: Outcome;
    if (typeof r.success === 'boolean' && r.score === undefined) outcome = { success: r.success };
    else if (typeof r.score === 'number' && Number.isFinite(r.score) && r.success === undefined) outcome = { score: r.score };
    else return { ok: false, problem: at(i, 'needs exactly one of "success" (true or false) or "score" (a finite number)') };
    if (r.trajectory !== undefined) {
      if (typeof r.trajectory !== 'string' || !HEX32.test(r.trajectory)) return { ok: false, problem: at(i, 'trajectory: expected 32 lowercase hex digits (memory.<memory_key>.trajectory)') };
      items.push({ trajectory: r.trajectory, outcome });
    } else if (r.trace_hash !== undefined) {
      if (typeof r.trace_hash !== 'string' || !HEX64.test(r.trace_hash)) return { ok: false, problem: at(i, 'trace_hash: expected 64 lowercase hex digits') };
      const episode = r.episode ?? '';
      if (typeof episode !== 'string' || episode.length > MAX_EPISODE_CHARS) return { ok: false, problem: at(i, `episode: expected a string of at most ${MAX_EPISODE_CHARS} characters`) };
      items.push({ traceHash: r.trace_hash, episode, outcome });
    } else return { ok: false, problem: at(i, 'needs "trajectory" or "trace_hash"') };
  }
  return { ok: true, items };
}

function encode(o: Outcome): string {
  return 'success' in o ? `success:${o.success ? 1 : 0}` : `score:${o.score}`;
}


/**
 * The outcome's increments: the arm's, its stratum's, and its key's when the key is the unit. An arm-level
 * credit (an ambiguous set whose candidates all have one arm) goes to the first candidate's stratum and key,
 * which may not be the episode's own: `arm_level` counts those.
 */
function credit(store: Counters & Claims, rec: TrajectoryRecord, o: Outcome, armLevel: boolean): void {
  const key = countersKey(rec.agent, rec.route, rec.experiment);
  const incr = (f: string, by = 1): void => {
    store.incr(key, f, by);
    if (rec.stratum !== undefined) store.incr(key, field.inStratum(rec.stratum, f), by);
  };
  const perKey = (what: KeySum, by: number): void => {
    if (rec.key !== undefined) store.incr(keyCountersKey(rec.agent, rec.route, rec.experiment), keyField(rec.arm, rec.stratum ?? 0, rec.key, what), by);
  };
  if ('success' in o) {
    incr(field.outcomeReported(rec.arm));
    perKey('ocr', 1);
    if (o.success) {
      incr(field.outcomeSuccess(rec.arm));
      perKey('ocs', 1);
    }
  } else {
    incr(field.scoreN(rec.arm));
    incr(field.scoreSum(rec.arm), o.score);
    incr(field.scoreSquares(rec.arm), o.score * o.score);
    perKey('scn', 1);
    perKey('scs', o.score);
  }
  if (armLevel) store.incr(key, field.outcomeArmLevel(rec.arm));
}

/** Sets `markKey` once to the outcome and credits `rec` the first time. */
async function creditOnce(store: Counters & Claims, markKey: string, rec: TrajectoryRecord, o: Outcome, ttlMs: number, armLevel: boolean): Promise<OutcomeResult> {
  const value = encode(o);
  const mark = await store.claim(markKey, value, ttlMs);
  if (mark.first) {
    credit(store, rec, o, armLevel);
    return armLevel ? 'arm_level' : 'accepted';
  }
  return mark.value === value ? 'duplicate' : 'conflict';
}

async function byHash(store: Counters & Claims, hash: string, episode: string, o: Outcome, ttlMs: number): Promise<OutcomeResult> {
  const members = await store.readSet(keys.hash(hash));
  if (members.length === 0) return 'unmatched';
  const stepsOf = new Map<string, number[]>();
  for (const m of members) {
    const colon = m.lastIndexOf(':');
    const id = m.slice(0, colon);
    const list = stepsOf.get(id) ?? [];
    list.push(Number(m.slice(colon + 1)));
    stepsOf.set(id, list);
  }
  // An episode ends where its trajectory's last step did: prefer trajectories whose last step has this hash.
  const seen = await Promise.all(
    [...stepsOf].map(async ([id, steps]) => {
      const last = Math.max(...(await store.readSet(keys.steps(id))).map((m) => Number(m.split('|', 1)[0])));
      return { id, ended: steps.includes(last) };
    }),
  );
  const ended = seen.filter((t) => t.ended).map((t) => t.id);
  const candidates = ended.length > 0 ? ended : seen.map((t) => t.id);
  const records = await Promise.all(candidates.map(async (id) => ({ id, rec: parseTrajectoryRecord(await store.readClaim(keys.trajectory(id))) })));
  const known = records.flatMap((r) => (r.rec === undefined ? [] : [{ id: r.id, rec: r.rec }]));
  const [first] = known;
  if (first === undefined) return 'unmatched';
  if (candidates.length === 1) return creditOnce(store, keys.outcome(first.id), first.rec, o, ttlMs, false);
  const f = first.rec;
  const oneArm = known.length === candidates.length && known.every(({ rec: r }) => r.agent === f.agent && r.route === f.route && r.experiment === f.experiment && r.arm === f.arm);
  if (!oneArm) return 'ambiguous';
  return creditOnce(store, keys.episodeOutcome(hash, episode), f, o, ttlMs, true);
}

/** Credits every outcome; returns how each was taken. Never throws for a bad outcome (parseOutcomes checked them). */
export async function postOutcomes(store: Counters & Claims, items: readonly OutcomeItem[], ttlMs: number, onResult?: (r: OutcomeResult) => void): Promise<OutcomeSummary> {
  const results: Record<OutcomeResult, number> = { accepted: 0, duplicate: 0, conflict: 0, unknown: 0, arm_level: 0, ambiguous: 0, unmatched: 0 };
  for (const item of items) {
    let r: OutcomeResult;
    if ('trajectory' in item) {
      const rec = parseTrajectoryRecord(await store.readClaim(keys.trajectory(item.trajectory)));
      r = rec === undefined ? 'unknown' : await creditOnce(store, keys.outcome(item.trajectory), rec, item.outcome, ttlMs, false);
    } else r = await byHash(store, item.traceHash, item.episode, item.outcome, ttlMs);
    results[r]++;
    store.incr(OUTCOME_COUNTERS_KEY, r);
    onResult?.(r);
  }
  await store.flush();
  return { received: items.length, results };
}
