/**
 * The experiment report (`GET /gateway/experiments`, README "Execution feedback and the experiment report"): the
 * counters recorder.ts keeps, read back per
 * agent, per route that has a split or an ensemble in the CURRENT config, per arm, with the statistics of
 * stats.ts. The default agent's routes stay where they always were (`routes`); virtual agents follow in `agents`.
 *
 * Tool success rate = tool_succeeded / (tool_succeeded + tool_failed), counted over robot lines of env
 * feedback (tool calls), not over steps. For a split with exactly two arms, `comparison` gives the difference
 * of rates as second arm minus first arm in config order (B - A), Newcombe's 95% interval for it and the
 * two-sided pooled two-proportion z-test p-value. Latency percentiles come from fixed log buckets and are
 * approximate (within one ~19% bucket).
 */
import type { CompiledAgent } from '../routing/agents.js';
import type { CompiledRoute } from '../routing/plan.js';
import { emptyFeedback, FEEDBACK_OUTCOMES, type FeedbackCounts, type FeedbackOutcome } from './feedback.js';
import { countersKey, type ExperimentsHost } from './recorder.js';
import { bucketQuantile, compareProportions, wilson } from './stats.js';

export interface ArmReport {
  arm: string;
  /** False for a backend outside the route's members (a fallback) that served some of its trajectories. */
  member: boolean;
  trajectories_started: number;
  steps: number;
  /** Steps the response cache answered (docs/cache.md): not in `steps` nor in any other count here. */
  cached_steps: number;
  candidates: { completed: number; error: number };
  /** Error codes of error candidates, most frequent first. */
  error_codes: Record<string, number>;
  /** Env feedback attributed to this arm; `other` = read but nothing to attribute (no metric outcome). */
  feedback: FeedbackCounts;
  tool_success: { succeeded: number; failed: number; rate: number | null; ci95: [number, number] | null };
  latency_ms: { samples: number; p50: number | null; p95: number | null };
}

interface Comparison {
  metric: 'tool_success_rate';
  /** `difference` = rate(b) - rate(a); a and b are the split's arms in config order. */
  a: string;
  b: string;
  difference: number | null;
  ci95: [number, number] | null;
  z: number | null;
  p_value: number | null;
  test: 'two-sided pooled two-proportion z-test';
}

export interface RouteReport {
  route: string;
  kind: 'split' | 'ensemble';
  sticky: boolean;
  /** Split weights or ensemble shares, in config order. */
  members: Record<string, number>;
  arms: ArmReport[];
  /** Two-arm splits only; null otherwise. */
  comparison: Comparison | null;
}

/** One virtual agent's experiments (README "Virtual agents"), counted apart from every other agent's. */
interface AgentExperiments {
  agent: string;
  agent_id: string;
  /** Where it is served, e.g. `/agents/ab-kitchen/`. */
  path: string;
  routes: RouteReport[];
}

export interface ExperimentsReport {
  generated_at: string;
  /** `redis`: cluster-wide totals; `memory`: this replica's since it started. */
  store: 'memory' | 'redis';
  latency_note: string;
  /** The default agent's (top-level) routes; empty when the config has none. */
  routes: RouteReport[];
  /** Each virtual agent's, in config order; empty without `agents`. */
  agents: AgentExperiments[];
}

const LATENCY_NOTE = 'p50/p95 interpolated in log-spaced buckets (5 ms .. 655 s, ~19% wide): approximate';

interface ArmCounts {
  started: number;
  steps: number;
  cachedSteps: number;
  completed: number;
  error: number;
  codes: Map<string, number>;
  feedback: FeedbackCounts;
  latency: Map<number, number>;
}

function emptyArm(): ArmCounts {
  return { started: 0, steps: 0, cachedSteps: 0, completed: 0, error: 0, codes: new Map(), feedback: emptyFeedback(), latency: new Map() };
}

const OUTCOMES: ReadonlySet<string> = new Set(FEEDBACK_OUTCOMES);

/** Counter fields (`<arm>|<what>[|<detail>]`, see recorder.ts) back into per-arm counts. */
function parseCounters(counters: Record<string, number>): Map<string, ArmCounts> {
  const arms = new Map<string, ArmCounts>();
  for (const [f, n] of Object.entries(counters)) {
    if (!Number.isFinite(n) || n === 0) continue;
    const bar = f.indexOf('|');
    if (bar <= 0) continue;
    const armName = f.slice(0, bar);
    const rest = f.slice(bar + 1);
    let a = arms.get(armName);
    if (a === undefined) arms.set(armName, (a = emptyArm()));
    if (rest === 'started') a.started += n;
    else if (rest === 'steps') a.steps += n;
    else if (rest === 'cached_steps') a.cachedSteps += n;
    else if (rest === 'completed') a.completed += n;
    else if (rest === 'error') a.error += n;
    else if (rest.startsWith('code|')) a.codes.set(rest.slice(5), (a.codes.get(rest.slice(5)) ?? 0) + n);
    else if (rest.startsWith('fb|') && OUTCOMES.has(rest.slice(3))) a.feedback[rest.slice(3) as FeedbackOutcome] += n; // the recorder writes only FeedbackOutcome names there
    else if (rest.startsWith('lat|')) {
      const b = Number(rest.slice(4));
      if (Number.isInteger(b) && b >= 0) a.latency.set(b, (a.latency.get(b) ?? 0) + n);
    }
  }
  return arms;
}

function round(x: number | undefined, digits: number): number | null {
  if (x === undefined || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function armReport(arm: string, member: boolean, c: ArmCounts): ArmReport {
  const ok = c.feedback.tool_succeeded;
  const bad = c.feedback.tool_failed;
  const ci = wilson(ok, ok + bad);
  let samples = 0;
  for (const n of c.latency.values()) samples += n;
  return {
    arm,
    member,
    trajectories_started: c.started,
    steps: c.steps,
    cached_steps: c.cachedSteps,
    candidates: { completed: c.completed, error: c.error },
    error_codes: Object.fromEntries([...c.codes].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))),
    feedback: c.feedback,
    tool_success: {
      succeeded: ok,
      failed: bad,
      rate: ok + bad > 0 ? ok / (ok + bad) : null,
      ci95: ci ?? null,
    },
    latency_ms: {
      samples,
      p50: round(bucketQuantile(c.latency, 0.5), 1),
      p95: round(bucketQuantile(c.latency, 0.95), 1),
    },
  };
}

function comparison(a: ArmReport, b: ArmReport): Comparison {
  const s = a.tool_success;
  const t = b.tool_success;
  const d = compareProportions(s.succeeded, s.succeeded + s.failed, t.succeeded, t.succeeded + t.failed);
  return {
    metric: 'tool_success_rate',
    a: a.arm,
    b: b.arm,
    difference: d?.difference ?? null,
    ci95: d?.ci95 ?? null,
    z: d?.z ?? null,
    p_value: d?.pValue ?? null,
    test: 'two-sided pooled two-proportion z-test',
  };
}

/**
 * One route's report from its counters. Members are listed in config order (even without counts, so an arm
 * that never got traffic shows as zeros); other backends of the route follow only when they have counts.
 */
function routeReport(route: CompiledRoute, counters: Record<string, number>): RouteReport {
  const parsed = parseCounters(counters);
  const memberNames = route.members.map((m) => m.name);
  const arms = memberNames.map((name) => armReport(name, true, parsed.get(name) ?? emptyArm()));
  for (const name of route.backends) {
    const c = parsed.get(name);
    if (!memberNames.includes(name) && c !== undefined) arms.push(armReport(name, false, c));
  }
  const kind = route.kind === 'split' ? 'split' : 'ensemble';
  return {
    route: route.name,
    kind,
    sticky: route.sticky,
    members: Object.fromEntries(route.members.map((m) => [m.name, m.weight])),
    arms,
    comparison: kind === 'split' && memberNames.length === 2 ? comparison(arms[0]!, arms[1]!) : null, // exactly two arms here (checked above)
  };
}

/** One agent's split and ensemble routes, from the store's counters. */
async function agentRoutes(host: ExperimentsHost, agent: CompiledAgent): Promise<RouteReport[]> {
  const experiments = agent.routes.routes.filter((r) => r.kind !== 'backend');
  const counters = await Promise.all(experiments.map((r) => host.store.readCounters(countersKey(agent.name, r.name))));
  return experiments.map((r, i) => routeReport(r, counters[i]!)); // i < counters.length (loop bound)
}

/** The whole report, from the store's counters of every split and ensemble route of every agent of the current config. */
export async function experimentsReport(host: ExperimentsHost): Promise<ExperimentsReport> {
  const { root, all } = host.current.agents;
  const virtual = all.filter((a) => a.virtual);
  const [routes, ...perAgent] = await Promise.all([
    root === undefined ? Promise.resolve([]) : agentRoutes(host, root),
    ...virtual.map((a) => agentRoutes(host, a)),
  ]);
  return {
    generated_at: new Date().toISOString(),
    store: host.store.kind,
    latency_note: LATENCY_NOTE,
    routes: routes ?? [],
    agents: virtual.map((a, i) => ({ agent: a.name, agent_id: a.agentId, path: `${a.prefix}/`, routes: perAgent[i] ?? [] })),
  };
}
