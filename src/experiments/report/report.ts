/** The experiment report (`GET /gateway/experiments`): every figure from the store, so replicas agree. */
import type { CompiledAgent } from '../../routing/agents.js';
import type { CompiledRoute } from '../../routing/plan.js';
import { analyse, type Secondary } from './analysis.js';
import type { Comparison, Metric } from './comparison.js';
import { experimentVerdict, type Verdict } from './verdict.js';
import { sampleRatio, srmWarning, type Srm } from './sample-ratio.js';
import { armReport, emptyArm, parseCounters, type ArmCounts, type ArmReport } from '../arm-counts.js';
import { countersKey, keyCountersKey, keys, parseExperimentRecord } from '../keys.js';
import { analyseStrata, stratumInputs, type StrataReport } from './strata.js';
import type { Unit } from '../../stats/index.js';
import { keyUnits, parseKeyCounters, slotLabels, type KeyCounters, type KeyUnits } from '../units.js';
import type { Experiments, ExperimentsHost } from '../recorder.js';
import type { GatewayConfig } from '../../config/schema.js';
import { MAX_STEPS_INDEXED } from '../step-index.js';
import { epochTaken } from '../lifetime.js';

/**
 * An ensemble member's own figures (docs/experiments.md#what-each-number-means): a trajectory is counted on the
 * member of its first leg, so a share per trajectory would credit one member with another's error candidates.
 */
function memberFigures(a: ArmReport): ArmReport {
  const { completed, error } = a.candidates;
  const all = completed + error;
  return { ...a, error_candidate_share: all > 0 ? error / all : null, error_candidate_share_of: 'candidates' };
}

export interface ExperimentInfo {
  id: string;
  name: string | null;
  started_at: string | null;
}

export interface ExperimentReport {
  agent: string;
  path: string;
  route: string;
  kind: 'split' | 'ensemble';
  experiment: ExperimentInfo;
  verdict: Verdict;
  primary: Metric;
  control: string;
  unit: 'trajectory' | 'key';
  assign_by: string | null;
  trustworthy: boolean;
  warnings: string[];
  srm: Srm | null;
  outcome_coverage: { p_value: number; flagged: boolean } | null;
  rejected_tags: number;
  arms: ArmReport[];
  comparisons: Comparison[];
  secondary: Secondary[];
  strata: StrataReport | null;
}

export interface EarlierExperiment {
  agent: string;
  route: string;
  experiment: ExperimentInfo;
  ended_at: string | null;
  arms: { arm: string; trajectories: number }[];
}

export interface ExperimentsReport {
  generated_at: string;
  store: 'memory' | 'redis';
  experiments: ExperimentReport[];
  earlier: EarlierExperiment[];
}

const ENSEMBLE_NOTE = 'ensemble members are not randomized: their rates are descriptive, and no comparison between them is tested';

export type ReportHost = ExperimentsHost & { experiments: Experiments };

/**
 * Before its first trajectory writes its record, an experiment started at its reset, unless another experiment of
 * the route already started after that reset (a reload started this one, at a time not known yet).
 */
async function experimentInfo(host: ReportHost, id: string, route: CompiledRoute | undefined, agent?: string, epoch?: string): Promise<ExperimentInfo> {
  const rec = parseExperimentRecord(await host.store.claims.read(keys.experiment(id)));
  let started = rec?.started_at ?? null;
  if (started === null && epoch !== undefined && route !== undefined && agent !== undefined && !(await epochTaken(host.store, agent, route.name, id, epoch))) started = epoch;
  return { id, name: rec?.name ?? route?.experiment.name ?? null, started_at: started };
}

async function routeReport(host: ReportHost, agent: CompiledAgent, route: CompiledRoute): Promise<ExperimentReport> {
  const { store, current, metrics } = host;
  const cfg = current.config.experiments;
  const id = await host.experiments.lifetimes.id(store, agent.name, route);
  const epoch = await host.experiments.lifetimes.epoch(store, agent.name, route.name);
  const unit: Unit = route.kind === 'split' && route.assignBy !== undefined ? 'key' : 'trajectory';
  const [counters, experiment, keyCounters] = await Promise.all([
    store.counters.read(countersKey(agent.name, route.name, id)),
    experimentInfo(host, id, route, agent.name, epoch),
    unit === 'key' ? store.counters.read(keyCountersKey(agent.name, route.name, id)) : Promise.resolve({}),
  ]);
  const parsed = parseCounters(counters);
  const perKey: KeyCounters = parseKeyCounters(keyCounters);
  const memberNames = route.members.map((m) => m.name);
  const entries: { arm: string; weight: number; member: boolean; counts: ArmCounts; keys?: KeyUnits }[] = route.members.map((m) => ({
    arm: m.name, weight: m.weight, member: true, counts: parsed.get(m.name) ?? emptyArm(), ...(unit === 'key' ? { keys: keyUnits(perKey.get(m.name)) } : {}),
  }));
  for (const name of route.backends) {
    const c = parsed.get(name);
    if (!memberNames.includes(name) && c !== undefined) entries.push({ arm: name, weight: 0, member: false, counts: c });
  }
  const since = await Promise.all(entries.map((e) => (e.counts.crossed > 0 ? store.claims.read(keys.crossed(id, e.arm)) : Promise.resolve(undefined))));
  const arms = entries.map((e, i) => armReport(e.arm, e.weight, e.member, e.counts, since[i] ?? null)).map((a) => (route.kind === 'ensemble' ? memberFigures(a) : a));

  const primary: Metric = route.experiment.primary ?? cfg.primary;
  // A route has at least one member (config schema); '' names no arm, and analyse then compares nothing.
  const control = route.experiment.control ?? memberNames[0] ?? '';
  const members = entries.filter((e) => e.member);
  const options = { primary, plannedTrajectories: cfg.sequential.planned_trajectories, burnIn: cfg.sequential.burn_in, unit };
  const analysis = analyse(members, control, options);
  const srm = route.kind === 'split' ? sampleRatio(members, unit) : null;
  let strata: StrataReport | null = null;
  if (cfg.stratify_by !== undefined && route.kind === 'split') {
    const labels = await slotLabels(store, id, cfg.max_strata);
    const keyStrata = new Map(members.map((m) => [m.arm, new Map([...m.counts.strata.keys()].map((h) => [h, keyUnits(perKey.get(m.arm), h)]))]));
    strata = analyseStrata(cfg.stratify_by, cfg.max_strata, labels, members, control, options, stratumInputs(unit === 'key' ? keyStrata : new Map()));
  }
  const randomized = route.kind === 'split';
  const warnings = randomized ? [...analysis.warnings] : [ENSEMBLE_NOTE];
  const leftOut = members.reduce((x, m) => x + m.counts.leftOut, 0);
  if (leftOut > 0) warnings.push(`${leftOut} trajectories started after experiments.max_trajectories (${cfg.max_trajectories}) were recorded: they are left out of every count`);
  warnings.push(...indexWarnings(members.map((m) => m.counts), cfg));
  if (srm?.flagged === true) {
    const line = srmWarning(srm);
    warnings.unshift(line);
    host.experiments.srmFlagged(agent.name, route.name, id, line);
  }
  metrics.srmFlagged.set({ agent: agent.name, route: route.name }, srm?.flagged === true ? 1 : 0);
  return {
    agent: agent.name,
    path: `${agent.prefix}/`,
    route: route.name,
    kind: route.kind === 'split' ? 'split' : 'ensemble',
    experiment,
    verdict: experimentVerdict(randomized ? 'split' : 'ensemble', members, analysis, srm, options),
    primary,
    control,
    unit,
    assign_by: unit === 'key' ? (route.assignBy?.path ?? null) : null,
    trustworthy: srm?.flagged !== true,
    warnings,
    srm,
    outcome_coverage: analysis.outcome_coverage,
    rejected_tags: arms.reduce((n, a) => n + a.rejected_tags, 0),
    arms,
    comparisons: randomized ? analysis.comparisons : [],
    secondary: randomized ? analysis.secondary : [],
    strata,
  };
}

async function earlierOf(host: ReportHost, agent: CompiledAgent, route: CompiledRoute, current: ExperimentInfo): Promise<EarlierExperiment[]> {
  const max = host.current.config.experiments.earlier_max;
  if (max === 0) return [];
  const ids = (await host.store.claims.members(keys.list(agent.name, route.name))).filter((id) => id !== current.id);
  const infos = await Promise.all(ids.map((id) => experimentInfo(host, id, undefined)));
  // Oldest last; ties (and records lost to a TTL) by id, so every replica orders them alike.
  const sorted = infos.sort((a, b) => (b.started_at ?? '').localeCompare(a.started_at ?? '') || (a.id < b.id ? -1 : 1)).slice(0, max);
  const counters = await Promise.all(sorted.map((e) => host.store.counters.read(countersKey(agent.name, route.name, e.id))));
  return sorted.map((e, i) => {
    const newer = i === 0 ? current.started_at : sorted[i - 1]?.started_at;
    const arms = [...parseCounters(counters[i] ?? {})].map(([arm, c]) => ({ arm, trajectories: c.units }));
    return { agent: agent.name, route: route.name, experiment: e, ended_at: newer ?? null, arms };
  });
}

export async function experimentsReport(host: ReportHost, now: Date = new Date()): Promise<ExperimentsReport> {
  await host.experiments.settled();
  await host.store.counters.flush();
  const experiments: ExperimentReport[] = [];
  const earlier: EarlierExperiment[] = [];
  for (const agent of host.current.agents.all) {
    for (const route of agent.routes.routes) {
      if (route.kind === 'backend') continue;
      const r = await routeReport(host, agent, route);
      experiments.push(r);
      earlier.push(...(await earlierOf(host, agent, route, r.experiment)));
    }
  }
  return { generated_at: now.toISOString(), store: host.store.kind, experiments, earlier };
}

function indexWarnings(counts: ArmCounts[], cfg: GatewayConfig['experiments']): string[] {
  const sum = (f: (c: ArmCounts) => number): number => counts.reduce((x, c) => x + f(c), 0);
  const lines: string[] = [];
  const hash = sum((c) => c.hashOver);
  const exp = sum((c) => c.exportOver);
  const steps = sum((c) => c.stepsOver);
  if (hash > 0) lines.push(`${hash} steps were not indexed under their trace hash, which already held experiments.hash_candidates_max (${cfg.hash_candidates_max}) candidates: an imported episode ending there counts as unmatched`);
  if (exp > 0) lines.push(`${exp} trajectories past experiments.export_max_trajectories (${cfg.export_max_trajectories}) are left out of the export`);
  if (steps > 0) lines.push(`${steps} steps past the ${MAX_STEPS_INDEXED} steps indexed per trajectory were not indexed: those trajectories' export rows and outcome joins stopped advancing`);
  return lines;
}
