/**
 * The experiment report (`GET /gateway/experiments`) as the Experiments page reads it: the agreed JSON shape
 * (`experiments[]` with `arms[]`, `comparisons[]` holding `fixed` and `sequential`, `srm`, `strata`, and
 * `earlier[]`), every optional part defaulted so the page never meets `undefined`. The one module that knows the
 * report's JSON: a report of the earlier shape (`routes[]` and `agents[].routes[]`, one two-arm comparison) is
 * mapped here too, so the pages see one shape whichever gateway answers.
 */

export type Interval = [number, number] | null;

export interface Rate {
  rate: number | null;
  ci95: Interval;
  /** What the rate is over, for the page (e.g. "80/120 lines"). */
  of: string;
}

export interface Arm {
  arm: string;
  weight: number | null;
  member: boolean;
  trajectories: number;
  steps: number;
  toolSuccess: Rate;
  outcomes: Rate | null;
  errorCodes: Record<string, number>;
  latency: { p50: number | null; p95: number | null };
  crossoverShare: number | null;
}

export interface Test {
  difference: number | null;
  ci95: Interval;
  pValue: number | null;
  method: string | null;
}

export interface Comparison {
  arm: string;
  control: string;
  metric: string;
  primary: boolean;
  label: string | null;
  fixed: Test | null;
  fixedReason: string | null;
  sequential: Test | null;
  sequentialReason: string | null;
}

export interface Srm {
  flagged: boolean;
  observed: Record<string, number>;
  expected: Record<string, number>;
  pValue: number | null;
  cause: string | null;
}

export interface Stratum {
  value: string;
  arms: Arm[];
  comparisons: Comparison[];
}

/** What the report says to do (its `verdict`), the first thing an experiment's card shows. */
export type VerdictState = 'collecting' | 'keep_running' | 'arms_differ' | 'planned_size_reached' | 'not_trustworthy';

export interface Verdict {
  state: VerdictState;
  /** The better arm, when the arms differ. */
  arm: string | null;
  text: string;
  /** While collecting: each arm's units toward the burn-in (`have` of `need`), the least advanced first. */
  progress: { arm: string; have: number; need: number; unit: string }[] | null;
}

export interface Experiment {
  agent: string;
  path: string | null;
  route: string;
  kind: string;
  id: string | null;
  name: string | null;
  startedAt: string | null;
  primary: string | null;
  control: string | null;
  unit: string | null;
  trustworthy: boolean;
  warnings: string[];
  srm: Srm | null;
  arms: Arm[];
  comparisons: Comparison[];
  strata: { by: string; values: Stratum[] } | null;
  verdict: Verdict | null;
  /** An earlier experiment's end; null for a current one. */
  endedAt: string | null;
}

export interface Earlier {
  agent: string;
  route: string;
  id: string | null;
  name: string | null;
  startedAt: string | null;
  endedAt: string | null;
  arms: { arm: string; trajectories: number }[];
}

export interface Report {
  generatedAt: string | null;
  store: string | null;
  experiments: Experiment[];
  earlier: Earlier[];
}

type J = Record<string, unknown>;

const obj = (v: unknown): J => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as J) : {}); // checked just before
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const interval = (v: unknown): Interval => {
  const a = arr(v);
  const lo = num(a[0]);
  const hi = num(a[1]);
  return lo === null || hi === null ? null : [lo, hi];
};
const counts = (v: unknown): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(obj(v))) if (num(n) !== null) out[k] = n as number; // num() checked it
  return out;
};

function arm(v: unknown, weights: Record<string, number> = {}): Arm {
  const a = obj(v);
  const name = str(a.arm) ?? '?';
  const ts = obj(a.tool_success);
  // Agreed shape: successes / lines; the earlier one: succeeded / failed.
  const ok = num(ts.successes) ?? num(ts.succeeded) ?? 0;
  const lines = num(ts.lines) ?? (num(ts.succeeded) ?? 0) + (num(ts.failed) ?? 0);
  const oc = a.outcomes === undefined || a.outcomes === null ? null : obj(a.outcomes);
  return {
    arm: name,
    weight: num(a.weight) ?? weights[name] ?? null,
    member: a.member !== false,
    trajectories: num(a.trajectories) ?? num(a.trajectories_started) ?? 0,
    steps: num(a.steps) ?? 0,
    toolSuccess: { rate: num(ts.rate), ci95: interval(ts.ci95), of: `${ok}/${lines} lines` },
    outcomes: oc === null ? null : { rate: num(oc.rate), ci95: interval(oc.ci95), of: `${num(oc.successes) ?? 0}/${num(oc.reported) ?? 0} reported` },
    errorCodes: counts(a.error_codes),
    latency: { p50: num(obj(a.latency_ms).p50), p95: num(obj(a.latency_ms).p95) },
    crossoverShare: num(obj(a.crossover).share),
  };
}

function test(v: unknown): Test | null {
  if (v === null || v === undefined) return null;
  const t = obj(v);
  return { difference: num(t.difference), ci95: interval(t.ci95), pValue: num(t.p_value), method: str(t.method) };
}

function comparison(v: unknown): Comparison {
  const c = obj(v);
  return {
    arm: str(c.arm) ?? '?',
    control: str(c.control) ?? '?',
    metric: str(c.metric) ?? '?',
    primary: c.primary !== false,
    label: str(c.label),
    fixed: test(c.fixed),
    fixedReason: str(c.fixed_reason),
    sequential: test(c.sequential),
    sequentialReason: str(c.sequential_reason),
  };
}

const STATES: readonly VerdictState[] = ['collecting', 'keep_running', 'arms_differ', 'planned_size_reached', 'not_trustworthy'];

/** `verdict.progress`: `{<arm>: {have, need, unit}}`, as a list, the least advanced arm first. */
function progress(v: unknown): Verdict['progress'] {
  const out: NonNullable<Verdict['progress']> = [];
  for (const [arm, x] of Object.entries(obj(v))) {
    const p = obj(x);
    const have = num(p.have);
    const need = num(p.need);
    if (have !== null && need !== null && need > 0) out.push({ arm, have, need, unit: str(p.unit) ?? 'units' });
  }
  return out.length === 0 ? null : out.sort((a, b) => a.have / a.need - b.have / b.need);
}

function verdict(v: unknown): Verdict | null {
  if (v === null || v === undefined) return null;
  const x = obj(v);
  const state = STATES.find((s) => s === x.state);
  if (state === undefined) return null;
  return { state, arm: str(x.arm), text: str(x.text) ?? '', progress: x.progress === undefined || x.progress === null ? null : progress(x.progress) };
}

function experiment(v: unknown): Experiment {
  const e = obj(v);
  const meta = obj(e.experiment);
  const srm = e.srm === null || e.srm === undefined ? null : obj(e.srm);
  const strata = e.strata === null || e.strata === undefined ? null : obj(e.strata);
  return {
    agent: str(e.agent) ?? 'default',
    path: str(e.path),
    route: str(e.route) ?? '?',
    kind: str(e.kind) ?? 'split',
    id: str(meta.id),
    name: str(meta.name),
    startedAt: str(meta.started_at),
    primary: str(e.primary),
    control: str(e.control),
    unit: str(e.unit),
    trustworthy: e.trustworthy !== false,
    warnings: arr(e.warnings).filter((w): w is string => typeof w === 'string'),
    srm:
      srm === null
        ? null
        : { flagged: srm.flagged === true, observed: counts(srm.observed), expected: counts(srm.expected), pValue: num(srm.p_value), cause: str(srm.cause) },
    arms: arr(e.arms).map((a) => arm(a)),
    comparisons: arr(e.comparisons).map(comparison),
    strata:
      strata === null
        ? null
        : {
            by: str(strata.by) ?? '?',
            values: arr(strata.values).map((s) => ({
              value: String(obj(s).value ?? '?'),
              arms: arr(obj(s).arms).map((a) => arm(a)),
              comparisons: arr(obj(s).comparisons).map(comparison),
            })),
          },
    verdict: verdict(e.verdict),
    endedAt: str(e.ended_at),
  };
}

/** `GET /gateway/experiments/earlier`: the final reports of earlier experiments, by experiment id. */
export function normalizeFinals(json: unknown): Map<string, Experiment> {
  const out = new Map<string, Experiment>();
  for (const v of arr(obj(json).experiments)) {
    const e = experiment(v);
    if (e.id !== null) out.set(e.id, e);
  }
  return out;
}

/** A route of the earlier report shape, as an experiment of the agreed one (no id, no sequential interval). */
function earlierShapeRoute(agent: string, path: string, v: unknown): Experiment {
  const r = obj(v);
  const weights = counts(r.members);
  const arms = arr(r.arms).map((a) => arm(a, weights));
  const c = r.comparison === null || r.comparison === undefined ? null : obj(r.comparison);
  const comparisons: Comparison[] =
    c === null
      ? []
      : [
          {
            arm: str(c.b) ?? '?',
            control: str(c.a) ?? '?',
            metric: 'tool_success',
            primary: true,
            label: 'process metric: tool success over observed robot lines, not episode success',
            fixed: { difference: num(c.difference), ci95: interval(c.ci95), pValue: num(c.p_value), method: str(c.test) },
            fixedReason: num(c.difference) === null ? 'needs tool lines in both arms' : null,
            sequential: null,
            sequentialReason: 'not computed by this gateway version',
          },
        ];
  return {
    agent, path, route: str(r.route) ?? '?', kind: str(r.kind) ?? 'split', id: null, name: null, startedAt: null,
    primary: 'tool_success', control: str(c?.a) ?? arms[0]?.arm ?? null, unit: 'trajectory', trustworthy: true, warnings: [], srm: null,
    arms, comparisons, strata: null, verdict: null, endedAt: null,
  };
}

export function normalizeReport(json: unknown): Report {
  const r = obj(json);
  if (Array.isArray(r.experiments)) {
    return {
      generatedAt: str(r.generated_at),
      store: str(r.store),
      experiments: r.experiments.map(experiment),
      earlier: arr(r.earlier).map((v) => {
        const e = obj(v);
        const meta = obj(e.experiment);
        return {
          agent: str(e.agent) ?? 'default', route: str(e.route) ?? '?', id: str(meta.id), name: str(meta.name), startedAt: str(meta.started_at),
          endedAt: str(e.ended_at), arms: arr(e.arms).map((a) => ({ arm: str(obj(a).arm) ?? '?', trajectories: num(obj(a).trajectories) ?? 0 })),
        };
      }),
    };
  }
  return {
    generatedAt: str(r.generated_at),
    store: str(r.store),
    experiments: [
      ...arr(r.routes).map((route) => earlierShapeRoute('default', '/', route)),
      ...arr(r.agents).flatMap((a) => arr(obj(a).routes).map((route) => earlierShapeRoute(str(obj(a).agent) ?? '?', str(obj(a).path) ?? '?', route))),
    ],
    earlier: [],
  };
}

/** One point of `GET /gateway/experiments/history` for one experiment. */
export interface HistorySeries {
  /** Seconds since the epoch (uPlot's x). */
  t: number[];
  difference: (number | null)[];
  fixedLo: (number | null)[];
  fixedHi: (number | null)[];
  seqLo: (number | null)[];
  seqHi: (number | null)[];
  trajectories: number[];
}

/** The history of `e`'s comparison of `arm` (its primary one when not given), oldest first. */
export function historySeries(json: unknown, e: Experiment, arm?: string): HistorySeries {
  const s: HistorySeries = { t: [], difference: [], fixedLo: [], fixedHi: [], seqLo: [], seqHi: [], trajectories: [] };
  for (const p of arr(obj(json).points)) {
    const at = Date.parse(str(obj(p).at) ?? '');
    if (!Number.isFinite(at)) continue;
    const x = arr(obj(p).experiments)
      .map(obj)
      .find((h) => h.agent === e.agent && h.route === e.route && (e.id === null || h.id === e.id));
    if (x === undefined) continue;
    const c = arr(x.comparisons).map(obj).find((k) => (arm === undefined ? true : k.arm === arm));
    const fixed = c === undefined ? null : interval(c.fixed_ci95);
    const seq = c === undefined ? null : interval(c.sequential_ci95);
    s.t.push(at / 1000);
    s.difference.push(c === undefined ? null : num(c.difference));
    s.fixedLo.push(fixed?.[0] ?? null);
    s.fixedHi.push(fixed?.[1] ?? null);
    s.seqLo.push(seq?.[0] ?? null);
    s.seqHi.push(seq?.[1] ?? null);
    s.trajectories.push(Object.values(counts(x.trajectories)).reduce((a, b) => a + b, 0));
  }
  return s;
}
