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
import type { Store } from '../state/types.js';
import { countersKey, field, keyCountersKey, keyField, keys, OUTCOME_COUNTERS_KEY, type KeySum, type TrajectoryRecord } from './keys.js';

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
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { ok: false, problem: 'the body must be a JSON object {"outcomes": [...]}' };
  const list = (body as { outcomes?: unknown }).outcomes; // a non-null, non-array object (checked above)
  if (!Array.isArray(list)) return { ok: false, problem: 'outcomes: expected a list' };
  if (list.length > max) return { ok: false, problem: `outcomes: ${list.length} outcomes, more than experiments.outcomes_max (${max}); post them in parts` };
  const items: OutcomeItem[] = [];
  for (let i = 0; i < list.length; i++) {
    const o: unknown = list[i];
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return { ok: false, problem: at(i, 'expected an object') };
    const r = o as Record<string, unknown>; // a non-null, non-array object (checked above)
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

function parseTrajectory(raw: string | undefined): TrajectoryRecord | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<TrajectoryRecord>; // written by recorder.ts; checked below
    if (typeof v.agent !== 'string' || typeof v.route !== 'string' || typeof v.experiment !== 'string' || typeof v.arm !== 'string') return undefined;
    const rec: TrajectoryRecord = { agent: v.agent, route: v.route, experiment: v.experiment, arm: v.arm, started_at: String(v.started_at) };
    if (typeof v.stratum === 'number' && Number.isInteger(v.stratum) && v.stratum >= 0) rec.stratum = v.stratum;
    if (typeof v.key === 'string' && /^[0-9a-f]{16}$/.test(v.key)) rec.key = v.key;
    return rec;
  } catch {
    return undefined;
  }
}

/**
 * The outcome's increments: the arm's, its stratum's, and its key's when the key is the unit. An arm-level
 * credit (an ambiguous set whose candidates all have one arm) goes to the first candidate's stratum and key,
 * which may not be the episode's own: `arm_level` counts those.
 */
function credit(store: Store, rec: TrajectoryRecord, o: Outcome, armLevel: boolean): void {
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
async function creditOnce(store: Store, markKey: string, rec: TrajectoryRecord, o: Outcome, ttlMs: number, armLevel: boolean): Promise<OutcomeResult> {
  const value = encode(o);
  const mark = await store.claim(markKey, value, ttlMs);
  if (mark.first) {
    credit(store, rec, o, armLevel);
    return armLevel ? 'arm_level' : 'accepted';
  }
  return mark.value === value ? 'duplicate' : 'conflict';
}

async function byHash(store: Store, hash: string, episode: string, o: Outcome, ttlMs: number): Promise<OutcomeResult> {
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
  const ids = [...stepsOf.keys()];
  const last = await Promise.all(ids.map(async (id) => Math.max(...(await store.readSet(keys.steps(id))).map((m) => Number(m.split('|', 1)[0])))));
  const ended = ids.filter((id, i) => stepsOf.get(id)!.includes(last[i]!)); // ids come from stepsOf; last has one entry per id
  const candidates = ended.length > 0 ? ended : ids;
  const records = await Promise.all(candidates.map(async (id) => parseTrajectory(await store.readClaim(keys.trajectory(id)))));
  const known = records.filter((r): r is TrajectoryRecord => r !== undefined);
  if (known.length === 0) return 'unmatched';
  if (candidates.length === 1) return creditOnce(store, keys.outcome(candidates[0]!), known[0]!, o, ttlMs, false); // one candidate, known
  const first = known[0]!; // known is not empty (above)
  const oneArm = known.length === candidates.length && known.every((r) => r.agent === first.agent && r.route === first.route && r.experiment === first.experiment && r.arm === first.arm);
  if (!oneArm) return 'ambiguous';
  return creditOnce(store, keys.episodeOutcome(hash, episode), first, o, ttlMs, true);
}

/** Credits every outcome; returns how each was taken. Never throws for a bad outcome (parseOutcomes checked them). */
export async function postOutcomes(store: Store, items: readonly OutcomeItem[], ttlMs: number, onResult?: (r: OutcomeResult) => void): Promise<OutcomeSummary> {
  const results = Object.fromEntries(OUTCOME_RESULTS.map((r) => [r, 0])) as Record<OutcomeResult, number>; // every key set from OUTCOME_RESULTS
  for (const item of items) {
    let r: OutcomeResult;
    if ('trajectory' in item) {
      const rec = parseTrajectory(await store.readClaim(keys.trajectory(item.trajectory)));
      r = rec === undefined ? 'unknown' : await creditOnce(store, keys.outcome(item.trajectory), rec, item.outcome, ttlMs, false);
    } else r = await byHash(store, item.traceHash, item.episode, item.outcome, ttlMs);
    results[r]++;
    store.incr(OUTCOME_COUNTERS_KEY, r);
    onResult?.(r);
  }
  await store.flush();
  return { received: items.length, results };
}
