/**
 * Experiment accounting on the request path (docs/experiments.md): the trajectory is the unit.
 *
 * Two calls per batch, both owned here:
 * - `begin`, after planning and before dispatch: per input of a split or ensemble route, the trajectory members its
 *   candidates will carry (InputPlan.trajectory, written only here), and whether this step counts. A step counts
 *   once: the recorder marks (trajectory, step) in the store with the request key of (request_id, input id); the
 *   same key again is a replay (not counted, same members), another key is a fork (a client re-sending an old
 *   memory, or several branches of one candidate) and continues as a NEW trajectory with a derived id, its unit
 *   counted with the whole history it carries.
 * - `recordBatch`, after the batch: plain counter increments (Store.incr, fire-and-forget, batched by the store),
 *   per experiment and arm: units K, Σs, Σn, Σs², Σn², Σs·n (the increments come from the tag's previous s and n,
 *   so they are idempotent with the marks above), steps, stages, trajectories with an env error / failure reason /
 *   error candidate / crossover, rerouted new trajectories (for the SRM cause), cached steps, candidates, latency.
 *
 * Requests of `magma-gateway check` (header `x-magma-gateway-check`) are left out entirely. Env feedback still
 * feeds `magma_gateway_execution_feedback_total` by the tag the input arrived with, on every route.
 */
import type { Logger } from '../logging.js';
import type { BatchResult } from '../dispatch/batch.js';
import { candidateTag } from '../dispatch/answer-bytes.js';
import { METRIC_OUTCOMES, type GatewayMetrics } from '../metrics.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import { hasFlag, type MemoryTag, type TrajectoryFlag, type TrajectoryState } from '../protocol/memory-tag.js';
import type { BatchPlan, CompiledRoute, CompiledRoutes, InputPlan } from '../routing/plan.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Store } from '../state/types.js';
import { FEEDBACK_OUTCOMES, parseEnvFeedback } from './feedback.js';
import { countersKey, field, keyCountersKey, keyField, keys, type ExperimentRecord, type KeySum, type TrajectoryRecord } from './keys.js';
import { Lifetimes } from './lifetime.js';
import { latencyBucket } from './latency.js';
import { advance, forkedId, forkStart, requestKey, stepFeedback } from './trajectory.js';
import { keyId, MISSING_VALUE, UnitSlots, valueText } from './units.js';
import { compileInputPath } from '../routing/match.js';
import type { RoutingInput } from '../routing/routing-input.js';
import type { GatewayConfig } from '../config/schema.js';

type ExperimentsConfig = GatewayConfig['experiments'];

/** What the recorder and the report read from the gateway, late-bound so a config reload is seen at once. */
export interface ExperimentsHost {
  current: Pick<GatewayRuntime, 'agents' | 'config' | 'upstreams'>;
  store: Store;
  metrics: GatewayMetrics;
}

/** The header `magma-gateway check` sends: its requests never enter an experiment. */
export const CHECK_HEADER = 'x-magma-gateway-check';

/**
 * Steps of one trajectory the index remembers (its last step is where an episode ended, and its export row):
 * BENCH episodes have tens of steps; past this a trajectory's outcome join and export row stop advancing.
 */
const MAX_STEPS_INDEXED = 1000;
/** Experiments one route's list keeps (the report shows the last experiments.earlier_max). */
const MAX_EXPERIMENTS_LISTED = 1000;

/** What `begin` decided for one input, which `recordBatch` counts. */
export interface StepDecision {
  readonly index: number;
  readonly route: CompiledRoute;
  readonly experiment: string;
  readonly arm: string;
  readonly state: TrajectoryState;
  /** What the increments start from: the members the input arrived with, or nothing for a new unit. */
  readonly base: { s: number; n: number; step: number; stages: number; flags: string };
  /** False for a replayed step: its increments were made when it was first counted. */
  readonly counted: boolean;
  readonly newUnit: boolean;
  /** A new unit of an assign_by split whose first input had no key (drawn per trajectory, its own unit). */
  readonly keyless: boolean;
  /** A new unit whose key came after experiments.max_keys: left out of the key-unit sums. */
  readonly keysOver: boolean;
  readonly rerouted?: { from: string; why: 'not_ready' | 'ejected' };
}

const ZERO = { s: 0, n: 0, step: 0, stages: 0, flags: '' };

/** Routes by name, built once per compiled config (the hot path looks a route up per input). */
const indexes = new WeakMap<CompiledRoutes, Map<string, CompiledRoute>>();
export function routeIndex(routes: CompiledRoutes): Map<string, CompiledRoute> {
  let idx = indexes.get(routes);
  if (idx === undefined) {
    idx = new Map(routes.routes.map((r) => [r.name, r]));
    indexes.set(routes, idx);
  }
  return idx;
}

export function isExperiment(route: CompiledRoute | undefined): route is CompiledRoute {
  return route !== undefined && route.kind !== 'backend';
}

/** The report arm of a tag on `route`: its split arm / ensemble member, else the backend if the route has it. */
function armOf(route: CompiledRoute, tag: Pick<MemoryTag, 'backend' | 'arm'>): string | undefined {
  if (tag.arm !== undefined && route.members.some((m) => m.name === tag.arm)) return tag.arm;
  return route.backends.has(tag.backend) ? tag.backend : undefined;
}

/**
 * The arm a step of `p` is credited to: the arm its trajectory was assigned (intention to treat: a `sticky: false`
 * split draws again at every step, but the trajectory's sums stay its first arm's), else the split arm drawn
 * now, else the ensemble member its trajectory follows.
 */
function trajectoryArm(route: CompiledRoute, p: InputPlan, continuing: boolean): string | undefined {
  if (continuing && p.tag?.arm !== undefined && route.members.some((m) => m.name === p.tag?.arm)) return p.tag.arm;
  if (p.arm !== undefined) return p.arm;
  if (continuing && p.tag !== undefined) return armOf(route, p.tag);
  return p.legs[0]?.backend;
}

export class Experiments {
  readonly lifetimes = new Lifetimes();
  /** Experiments whose record this process has written (one write per experiment per process). */
  private readonly recorded = new Set<string>();
  /** Index writes still on their way to the store; outcomes and the report wait for them. */
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly host: () => ExperimentsHost,
    private readonly log?: Pick<Logger, 'warn'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private readonly slots = new UnitSlots();
  private readonly readers = new Map<string, (input: RoutingInput) => unknown>();

  /** Experiments whose sample-ratio mismatch this process has logged. */
  private readonly srmLogged = new Set<string>();

  /** A report found a sample-ratio mismatch: a warning log line, once per experiment per process. */
  srmFlagged(agent: string, route: string, experiment: string, line: string): void {
    if (this.srmLogged.has(experiment)) return;
    if (this.srmLogged.size > 10_000) this.srmLogged.clear();
    this.srmLogged.add(experiment);
    this.log?.warn({ agent, route, experiment }, line);
  }

  /**
   * Starts a new experiment on every split and ensemble route of the current config matching `agent` and
   * `route` (both optional); returns the routes reset.
   */
  async reset(agent: string | undefined, route: string | undefined): Promise<{ agent: string; route: string }[]> {
    const { store, current } = this.host();
    const ttlMs = current.config.experiments.index_ttl_s * 1000;
    const done: { agent: string; route: string }[] = [];
    const at = this.now();
    for (const a of current.agents.all) {
      if (agent !== undefined && a.name !== agent) continue;
      for (const r of a.routes.routes) {
        if (!isExperiment(r) || (route !== undefined && r.name !== route)) continue;
        await this.lifetimes.reset(store, a.name, r.name, ttlMs, at);
        done.push({ agent: a.name, route: r.name });
      }
    }
    return done;
  }

  /** Resolves once this process's index writes so far are in the store. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private track(p: Promise<unknown>): void {
    const done = p.catch((err: unknown) => this.log?.warn({ err }, 'experiment index write failed')).finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  /**
   * The trajectory members of each experiment input of `plan` (set on the plan) and what counts. Never throws and
   * never fails the batch: on a store failure the inputs go out without trajectory members and are not counted.
   */
  async begin(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, excluded: boolean): Promise<StepDecision[]> {
    if (excluded) return [];
    try {
      return await this.decide(compiled, request, plan);
    } catch (err) {
      this.log?.warn({ err }, 'experiment accounting failed for a batch');
      return [];
    }
  }

  private async decide(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan): Promise<StepDecision[]> {
    const { store, current } = this.host();
    const { experiments: cfg } = current.config;
    const ttlMs = cfg.index_ttl_s * 1000;
    const routes = routeIndex(compiled);
    const agent = compiled.agent;
    const work: Promise<StepDecision | undefined>[] = [];
    for (const p of plan.inputs) {
      const route = routes.get(p.route);
      const input = request.inputs[p.index];
      if (!isExperiment(route) || input === undefined) continue;
      work.push(
        (async (): Promise<StepDecision | undefined> => {
          const experiment = await this.lifetimes.id(store, agent, route);
          const previous = p.tag !== undefined && p.tag.route === p.route ? p.tag.trajectory : undefined;
          const continuing = previous !== undefined;
          const arm = trajectoryArm(route, p, continuing);
          if (arm === undefined) return undefined;
          const key = requestKey(cfg.salt, request.request_id, input.id);
          const instruction = input.instruction;
          const feedback = stepFeedback(instruction);
          const unit = continuing ? undefined : await this.newUnit(store, cfg, agent, route, p, input, experiment, key, ttlMs);
          let state = advance(previous, { id: key, experiment, ...unit?.members }, instruction, feedback);
          let base = previous ?? ZERO;
          let newUnit = !continuing;
          let mark = await store.claim(keys.step(state.id, state.step), key, ttlMs);
          if (!mark.first && mark.value !== key && previous !== undefined) {
            // A fork: the same (trajectory, step) continued by another request. It goes on as a trajectory of its
            // own that counts only what comes after the fork (docs/experiments.md#forks).
            state = advance(forkStart(previous, forkedId(previous.id, key)), { id: key, experiment }, instruction, feedback);
            base = ZERO;
            newUnit = true;
            mark = await store.claim(keys.step(state.id, state.step), key, ttlMs);
          }
          const counted = mark.first;
          p.trajectory = state;
          const d: StepDecision = { index: p.index, route, experiment: state.experiment, arm, state, base, counted, newUnit, keyless: unit?.keyless === true, keysOver: unit?.keysOver === true };
          if (counted) this.track(this.index(store, agent, d, ttlMs, cfg.hash_candidates_max));
          if (counted && newUnit && p.drawnArm !== undefined) {
            return { ...d, rerouted: { from: p.drawnArm, why: this.whyUnservable(p.drawnArm) } };
          }
          return d;
        })(),
      );
    }
    const decided = await Promise.all(work);
    return decided.filter((d): d is StepDecision => d !== undefined);
  }

  /**
   * The stratum and key a new trajectory's unit gets from its first input (experiments/units.ts). Never re-read:
   * they travel in the tag, and a fork inherits its parent's.
   */
  private async newUnit(
    store: Store,
    cfg: ExperimentsConfig,
    agent: string,
    route: CompiledRoute,
    p: InputPlan,
    input: RoutingInput,
    experiment: string,
    trajectory: string,
    ttlMs: number,
  ): Promise<{ members: { stratum?: number; key?: string }; keyless: boolean; keysOver: boolean }> {
    const members: { stratum?: number; key?: string } = {};
    if (cfg.stratify_by !== undefined) {
      const label = valueText(this.reader(cfg.stratify_by)(input)) ?? MISSING_VALUE;
      members.stratum = await this.slots.stratum(store, experiment, label, cfg.max_strata, ttlMs);
    }
    if (route.assignBy === undefined) return { members, keyless: false, keysOver: false };
    // A trajectory without a key was drawn on its own: its unit is itself, under an id no key hash takes.
    const keyless = p.assignKey === undefined;
    const id = p.assignKey === undefined ? trajectory.slice(0, 16) : keyId(experiment, p.assignKey);
    const counter = keyCountersKey(agent, route.name, experiment);
    const admitted = await this.slots.keyAdmitted(store, experiment, id, cfg.max_keys, ttlMs, counter);
    if (admitted) members.key = id;
    return { members, keyless, keysOver: !admitted };
  }

  /** The reader of a stratify_by path, compiled once per path. */
  private reader(path: string): (input: RoutingInput) => unknown {
    let r = this.readers.get(path);
    if (r === undefined) {
      if (this.readers.size > 100) this.readers.clear();
      this.readers.set(path, (r = compileInputPath(path)));
    }
    return r;
  }

  private whyUnservable(backend: string): 'not_ready' | 'ejected' {
    const b = this.host().current.upstreams.backends.get(backend);
    return b !== undefined && b.replicas.some((r) => r.state === 'ejected') ? 'ejected' : 'not_ready';
  }

  /** The outcome index of a counted step: its trace hash, its step, and for a new unit what credits its arm. */
  private async index(store: Store, agent: string, d: StepDecision, ttlMs: number, hashMax: number): Promise<void> {
    const { state } = d;
    const writes: Promise<unknown>[] = [
      store.addToSet(keys.hash(state.hash), `${state.id}:${state.step}`, ttlMs, hashMax),
      store.addToSet(keys.steps(state.id), stepMember(state), ttlMs, MAX_STEPS_INDEXED),
    ];
    if (d.newUnit) {
      writes.push(store.addToSet(keys.trajectories(d.experiment), state.id, ttlMs, this.host().current.config.experiments.export_max_trajectories));
      const at = this.now().toISOString();
      const rec: TrajectoryRecord = { agent, route: d.route.name, experiment: d.experiment, arm: d.arm, started_at: at };
      if (state.stratum !== undefined) rec.stratum = state.stratum;
      if (state.key !== undefined) rec.key = state.key;
      writes.push(store.claim(keys.trajectory(state.id), JSON.stringify(rec), ttlMs));
      if (!this.recorded.has(d.experiment)) {
        this.recorded.add(d.experiment);
        // A reset experiment started at its reset, whenever its first trajectory came.
        const epoch = await this.lifetimes.epoch(store, agent, d.route.name);
        const exp: ExperimentRecord = { agent, route: d.route.name, name: d.route.experiment.name ?? null, started_at: epoch ?? at };
        writes.push(store.claim(keys.experiment(d.experiment), JSON.stringify(exp), ttlMs));
        writes.push(store.addToSet(keys.list(agent, d.route.name), d.experiment, ttlMs, MAX_EXPERIMENTS_LISTED));
      }
    }
    await Promise.all(writes);
  }

  /**
   * Counts one answered batch from `decisions` (what begin returned for it). Synchronous and never throws:
   * accounting must not cost a client its answer.
   */
  recordBatch(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, result: BatchResult, decisions: readonly StepDecision[]): void {
    try {
      this.feedbackMetric(compiled, request, plan);
      const offsets = outputOffsets(request, result);
      for (const d of decisions) if (d.counted) this.count(compiled.agent, request, result, d, offsets);
      this.latency(compiled, result, decisions);
    } catch (err) {
      this.log?.warn({ err }, 'experiment accounting failed for a batch');
    }
  }

  private count(agent: string, request: IndexedAgentRequest, result: BatchResult, d: StepDecision, offsets: readonly number[]): void {
    const { store, metrics } = this.host();
    // The place for steps the response cache served: they were counted when first computed, on the arm and in the
    // experiment of the tag the cached candidates carry (a resumed trajectory keeps the first run's arm).
    if (result.cached?.has(d.index) === true) {
      const first = result.outputs[offsets[d.index] ?? -1];
      const tag = first === undefined ? undefined : candidateTag(first);
      const arm = (tag === undefined ? undefined : armOf(d.route, tag)) ?? d.arm;
      store.incr(countersKey(agent, d.route.name, tag?.trajectory?.experiment ?? d.experiment), field.cached(arm), 1);
      return;
    }
    const key = countersKey(agent, d.route.name, d.experiment);
    const incr = (f: string, by = 1): void => {
      if (by !== 0) store.incr(key, f, by);
    };
    const { arm, state, base } = d;
    const st = state.stratum;
    // The unit sums, also in the trajectory's stratum when the experiment is stratified.
    const unitIncr = (f: string, by = 1): void => {
      incr(f, by);
      if (st !== undefined) incr(field.inStratum(st, f), by);
    };
    if (d.newUnit) {
      unitIncr(field.units(arm));
      metrics.trajectoriesStarted.inc({ agent, route: d.route.name, arm });
      if (d.rerouted !== undefined) incr(field.rerouted(d.rerouted.from, d.rerouted.why));
      if (d.keyless) incr(field.keyless(arm));
      if (d.keysOver) incr(field.keysOver(arm));
    }
    if (base.n === 0 && state.n > 0) unitIncr(field.unitsWithLines(arm));
    unitIncr(field.s(arm), state.s - base.s);
    unitIncr(field.n(arm), state.n - base.n);
    unitIncr(field.ss(arm), state.s * state.s - base.s * base.s);
    unitIncr(field.nn(arm), state.n * state.n - base.n * base.n);
    unitIncr(field.sn(arm), state.s * state.n - base.s * base.n);
    if (state.key !== undefined) {
      // Per-key totals are plain sums, so replicas merge them by addition; squares are taken at report time.
      const kk = keyCountersKey(agent, d.route.name, d.experiment);
      const keyIncr = (what: KeySum, by: number): void => {
        if (by !== 0 && state.key !== undefined) store.incr(kk, keyField(arm, st ?? 0, state.key, what), by);
      };
      keyIncr('t', d.newUnit ? 1 : 0);
      keyIncr('s', state.s - base.s);
      keyIncr('n', state.n - base.n);
    }
    // A fork's unit carries the history it shares with its parent: its steps and stages count from 0.
    incr(field.steps(arm), state.step - base.step);
    incr(field.stepsSquared(arm), state.step * state.step - base.step * base.step);
    incr(field.stages(arm), state.stages - base.stages);
    incr(field.stagesSquared(arm), state.stages * state.stages - base.stages * base.stages);
    const newly = (flag: TrajectoryFlag, now: boolean): boolean => (now || hasFlag(state, flag)) && !base.flags.includes(flag);
    if (newly('e', false)) incr(field.envError(arm));
    if (newly('f', false)) incr(field.failureReason(arm));

    const outputs = result.outputs.length === 0 ? [] : result.outputs.slice(offsets[d.index], offsets[d.index + 1]);
    const errored = outputs.some((o) => o.status === 'error');
    if (newly('c', errored)) incr(field.errorCandidate(arm));
    const crossed = d.route.kind === 'split' && result.legs.some((l) => l.input === d.index && l.backend !== arm);
    if (newly('x', crossed)) {
      incr(field.crossed(arm));
      this.track(store.claim(keys.crossed(d.experiment, arm), this.now().toISOString(), this.host().current.config.experiments.index_ttl_s * 1000));
    }

    for (const out of outputs) {
      // An ensemble's candidates are each their producing member's (or fallback's); a split's are its arm's.
      const tag = candidateTag(out);
      const by = d.route.kind === 'ensemble' && tag !== undefined ? (armOf(d.route, tag) ?? arm) : arm;
      if (out.status === 'error') {
        incr(field.error(by));
        // Capped per backend like the candidate error metric: a backend inventing codes cannot grow the hash.
        if (out.error) incr(field.code(by, metrics.codeLabel(tag?.backend ?? by, out.error.code)));
      } else incr(field.completed(by));
    }
    const input = request.inputs[d.index];
    if (input?.instruction.type === 'env') {
      const counts = parseEnvFeedback(input.instruction.content);
      for (const outcome of FEEDBACK_OUTCOMES) incr(field.feedback(arm, outcome), counts[outcome]);
    }
  }

  /** Each leg's sub-request time, per arm, for the counted steps. */
  private latency(compiled: CompiledRoutes, result: BatchResult, decisions: readonly StepDecision[]): void {
    if (decisions.length === 0) return;
    const { store } = this.host();
    const byInput = new Map(decisions.filter((d) => d.counted).map((d) => [d.index, d]));
    for (const leg of result.legs) {
      const d = byInput.get(leg.input);
      if (leg.ms === undefined || d === undefined || result.cached?.has(d.index) === true) continue;
      const by = d.route.kind === 'ensemble' ? (armOf(d.route, { backend: leg.backend, arm: leg.arm }) ?? d.arm) : d.arm;
      store.incr(countersKey(compiled.agent, d.route.name, d.experiment), field.latency(by, latencyBucket(leg.ms)));
    }
  }

  /** Env feedback to `magma_gateway_execution_feedback_total`, by the tag each env input arrived with. */
  private feedbackMetric(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan): void {
    const routes = routeIndex(compiled);
    const { executionFeedback } = this.host().metrics;
    for (const p of plan.inputs) {
      const input = request.inputs[p.index];
      const tag = p.tag;
      if (input === undefined || tag === undefined || input.instruction.type !== 'env') continue;
      const route = routes.get(tag.route);
      // Tags come from clients: only configured names become metric labels.
      if (route === undefined || !compiled.backends.has(tag.backend)) continue;
      const counts = parseEnvFeedback(input.instruction.content);
      for (const outcome of METRIC_OUTCOMES) {
        const n = counts[outcome];
        if (n > 0) executionFeedback.inc({ agent: compiled.agent, route: route.name, backend: tag.backend, outcome }, n);
      }
    }
  }
}

/** A counted step in the trajectory's step set: what the export's row shows once it is the last. */
export function stepMember(t: TrajectoryState): string {
  return `${t.step}|${t.s}|${t.n}|${t.stages}|${t.flags}`;
}

/** Where each input's candidates start in `outputs` (input order, `num_outputs` each), and the end. */
function outputOffsets(request: IndexedAgentRequest, result: BatchResult): number[] {
  const offsets = [0];
  if (result.outputs.length === 0) return offsets;
  let at = 0;
  for (const input of request.inputs) offsets.push((at += input.num_outputs));
  return offsets;
}
