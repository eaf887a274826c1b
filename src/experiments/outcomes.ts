/**
 * Episode outcomes (docs/experiments.md#outcomes-from-bench), credited once, by trajectory id or trace hash, to the
 * arm its trajectory was assigned: the first per trajectory and per episode is kept (a set-once mark).
 */
import type { StorePorts } from '../state/types.js';
import { isJsonObject } from '../protocol/schemas.js';
import { countersKey, field, keyCountersKey, keyField, keys, OUTCOME_COUNTERS_KEY, parseTrajectoryRecord, type KeySum, type TrajectoryRecord } from './keys.js';
import { lastStepOf } from './replay.js';
import { groupBy } from '../dispatch/batch-item.js';

export type Outcome = { success: boolean } | { score: number };
export type OutcomeItem =
  | { trajectory: string; outcome: Outcome }
  | { traceHash: string; episode: string; outcome: Outcome };

export const OUTCOME_RESULTS = ['accepted', 'duplicate', 'conflict', 'replay', 'superseded', 'unknown', 'ambiguous', 'unmatched'] as const;
export type OutcomeResult = (typeof OUTCOME_RESULTS)[number];

export interface OutcomeMatch {
  episode: string | null;
  trajectory: string | null;
  arm: string | null;
  outcome: Outcome;
  result: OutcomeResult;
}

export interface OutcomeSummary {
  received: number;
  results: Record<OutcomeResult, number>;
  dry_run?: OutcomeMatch[];
}

const HEX32 = /^[0-9a-f]{32}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const MAX_EPISODE_CHARS = 500;

function at(i: number, what: string): string {
  return `outcomes[${i}]: ${what}`;
}

/** Bounded: at most `max` outcomes, each checked in constant work. */
export function parseOutcomes(body: unknown, max: number): { ok: true; items: OutcomeItem[]; dryRun: boolean } | { ok: false; problem: string } {
  if (!isJsonObject(body)) return { ok: false, problem: 'the body must be a JSON object {"outcomes": [...]}' };
  if (body.dry_run !== undefined && typeof body.dry_run !== 'boolean') return { ok: false, problem: 'dry_run: expected true or false' };
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
  return { ok: true, items, dryRun: body.dry_run === true };
}

function encode(o: Outcome): string {
  return 'success' in o ? `success:${o.success ? 1 : 0}` : `score:${o.score}`;
}

function credit(store: Pick<StorePorts, 'counters' | 'claims'>, rec: TrajectoryRecord, o: Outcome): void {
  const key = countersKey(rec.agent, rec.route, rec.experiment);
  const incr = (f: string, by = 1): void => {
    store.counters.incr(key, f, by);
    if (rec.stratum !== undefined) store.counters.incr(key, field.inStratum(rec.stratum, f), by);
  };
  const perKey = (what: KeySum, by: number): void => {
    if (rec.key !== undefined) store.counters.incr(keyCountersKey(rec.agent, rec.route, rec.experiment), keyField(rec.arm, rec.stratum ?? 0, rec.key, what), by);
  };
  if ('success' in o) {
    incr(field.count(rec.arm, 'outcomeReported'));
    perKey('ocr', 1);
    if (o.success) {
      incr(field.count(rec.arm, 'outcomeSuccess'));
      perKey('ocs', 1);
    }
  } else {
    incr(field.count(rec.arm, 'scoreN'));
    incr(field.count(rec.arm, 'scoreSum'), o.score);
    incr(field.count(rec.arm, 'scoreSquares'), o.score * o.score);
    perKey('scn', 1);
    perKey('scs', o.score);
  }
}

/** A dry run claims in this post only, so a dry run of a whole directory matches one to one as the real post would. */
class Marks {
  private readonly local = new Map<string, string>();

  constructor(
    private readonly store: Pick<StorePorts, 'counters' | 'claims'>,
    private readonly ttlMs: number,
    readonly dry: boolean,
  ) {}

  async claim(key: string, value: string): Promise<{ first: boolean; value: string }> {
    if (!this.dry) return this.store.claims.claim(key, value, this.ttlMs);
    const held = this.local.get(key) ?? (await this.store.claims.read(key));
    if (held !== undefined) return { first: false, value: held };
    this.local.set(key, value);
    return { first: true, value };
  }

  read(key: string): Promise<string | undefined> | string | undefined {
    return this.local.get(key) ?? this.store.claims.read(key);
  }
}

type Matched = { result: OutcomeResult; trajectory?: string; rec?: TrajectoryRecord };

async function creditOnce(marks: Marks, id: string, rec: TrajectoryRecord, o: Outcome): Promise<Matched> {
  const mark = await marks.claim(keys.outcome(id), encode(o));
  if (mark.first) return { result: 'accepted', trajectory: id, rec };
  return { result: mark.value === encode(o) ? 'duplicate' : 'conflict', trajectory: id, rec };
}

/** An outcome posted by trajectory id: a replay's credits what it replays, a superseded one's nothing. */
async function byId(marks: Marks, store: Pick<StorePorts, 'counters' | 'claims'>, id: string, o: Outcome): Promise<Matched> {
  if ((await store.claims.read(keys.superseded(id))) !== undefined) return { result: 'superseded', trajectory: id };
  const rec = parseTrajectoryRecord(await store.claims.read(keys.trajectory(id)));
  if (rec !== undefined) return creditOnce(marks, id, rec, o);
  const original = await store.claims.read(keys.replayOf(id));
  if (original === undefined) return { result: 'unknown', trajectory: id };
  // The original may itself have been taken over by a resumed trajectory: that one holds the unit now.
  const holder = (await store.claims.read(keys.superseded(original))) ?? original;
  const orec = parseTrajectoryRecord(await store.claims.read(keys.trajectory(holder)));
  return orec === undefined ? { result: 'unknown', trajectory: id } : creditOnce(marks, holder, orec, o);
}

async function byHash(marks: Marks, store: Pick<StorePorts, 'counters' | 'claims'>, hash: string, episode: string, o: Outcome): Promise<Matched> {
  const members = await store.claims.members(keys.hash(hash));
  if (members.length === 0) return { result: 'unmatched' };
  const stepsOf = new Map<string, number[]>();
  for (const m of members) {
    const colon = m.lastIndexOf(':');
    const id = m.slice(0, colon);
    const list = stepsOf.get(id) ?? [];
    list.push(Number(m.slice(colon + 1)));
    stepsOf.set(id, list);
  }
  // Superseded trajectories are no units; an episode ends where its trajectory's last step did.
  const seen = await Promise.all(
    [...stepsOf].map(async ([id, steps]) => {
      const [last, sup] = await Promise.all([store.claims.members(keys.steps(id)), store.claims.read(keys.superseded(id))]);
      return { id, ended: steps.includes(lastStepOf(last)), superseded: sup !== undefined };
    }),
  );
  const units = seen.filter((t) => !t.superseded);
  // Only the prefix of an episode a resumed trajectory took over (a crashed run's partial episode): no unit.
  if (units.length === 0) return { result: 'superseded', ...(seen[0] === undefined ? {} : { trajectory: seen[0].id }) };
  const ended = units.filter((t) => t.ended);
  const candidates = (ended.length > 0 ? ended : units).map((t) => t.id).sort();
  const records = await Promise.all(candidates.map(async (id) => ({ id, rec: parseTrajectoryRecord(await store.claims.read(keys.trajectory(id))) })));
  const known = records.flatMap((r) => (r.rec === undefined ? [] : [{ id: r.id, rec: r.rec }]));
  const [first] = known;
  if (first === undefined) return { result: 'unmatched' };
  const f = first.rec;
  if (!known.every(({ rec: r }) => r.agent === f.agent && r.route === f.route)) return { result: 'ambiguous' };
  // Several experiments of one route: a rerun of the same seeds after a reset. Its results credit the newest; a
  // directory imported again that the newest contradicts is an older one's, whose duplicate it then is.
  const [newest = known, ...older] = newestFirst(known);
  const m = await matchIn(marks, newest, hash, episode, o);
  if (m.result !== 'conflict') return m;
  for (const group of older) {
    const before = await marks.read(keys.episodeOutcome(group[0]?.rec.experiment ?? '', hash, episode));
    const e = before === undefined ? undefined : earlier(before, o, group);
    if (e?.result === 'duplicate') return e;
  }
  return m;
}

type Known = { id: string; rec: TrajectoryRecord };

/** The trajectories of each experiment, the one whose trajectories started last first. */
function newestFirst(known: readonly Known[]): Known[][] {
  const latest = (g: readonly Known[]): string => g.reduce((m, k) => (k.rec.started_at > m ? k.rec.started_at : m), '');
  return [...groupBy(known, (k) => k.rec.experiment).values()].sort((a, b) => latest(b).localeCompare(latest(a)));
}

/** An episode credited before (its mark `<outcome>><trajectory>`): the same outcome is a duplicate, another a conflict. */
function earlier(before: string, o: Outcome, known: readonly Known[]): Matched {
  const [value = '', id] = before.split('>');
  const rec = known.find((k) => k.id === id)?.rec;
  return { result: value === encode(o) ? 'duplicate' : 'conflict', ...(id === undefined || id === '' ? {} : { trajectory: id }), ...(rec === undefined ? {} : { rec }) };
}

/** Within one experiment: one arm, each episode credited once, each trajectory at most one episode. */
async function matchIn(marks: Marks, known: readonly Known[], hash: string, episode: string, o: Outcome): Promise<Matched> {
  const [first] = known;
  if (first === undefined) return { result: 'unmatched' };
  const f = first.rec;
  if (!known.every(({ rec: r }) => r.experiment === f.experiment && r.arm === f.arm)) return { result: 'ambiguous' };
  // The same episode posted again (the same directory imported twice) is a duplicate, whatever it matched.
  const episodeMark = keys.episodeOutcome(f.experiment, hash, episode);
  const before = await marks.read(episodeMark);
  if (before !== undefined) return earlier(before, o, known);
  let same: { id: string; rec: TrajectoryRecord } | undefined;
  for (const k of known) {
    const m = await creditOnce(marks, k.id, k.rec, o);
    if (m.result === 'accepted') {
      await marks.claim(episodeMark, `${encode(o)}>${k.id}`);
      return m;
    }
    if (m.result === 'duplicate') same ??= k;
  }
  // Every trajectory with this trace has its outcome: a rerun's episode the cache replayed, or a contradiction.
  if (same === undefined) return { result: 'conflict', trajectory: first.id, rec: f };
  await marks.claim(episodeMark, `${encode(o)}>${same.id}`);
  return { result: 'replay', trajectory: same.id, rec: same.rec };
}

export async function postOutcomes(
  store: Pick<StorePorts, 'counters' | 'claims'>,
  items: readonly OutcomeItem[],
  ttlMs: number,
  onResult?: (r: OutcomeResult) => void,
  dryRun = false,
): Promise<OutcomeSummary> {
  const results = Object.fromEntries(OUTCOME_RESULTS.map((r) => [r, 0])) as Record<OutcomeResult, number>; // every key set just above
  const marks = new Marks(store, ttlMs, dryRun);
  const listed: OutcomeMatch[] = [];
  for (const item of items) {
    const m = 'trajectory' in item ? await byId(marks, store, item.trajectory, item.outcome) : await byHash(marks, store, item.traceHash, item.episode, item.outcome);
    if (m.result === 'accepted' && m.rec !== undefined && !dryRun) credit(store, m.rec, item.outcome);
    results[m.result]++;
    if (dryRun) {
      listed.push({ episode: 'episode' in item ? item.episode : null, trajectory: m.trajectory ?? null, arm: m.rec?.arm ?? null, outcome: item.outcome, result: m.result });
    } else {
      store.counters.incr(OUTCOME_COUNTERS_KEY, m.result);
      onResult?.(m.result);
    }
  }
  await store.counters.flush();
  return { received: items.length, results, ...(dryRun ? { dry_run: listed } : {}) };
}
