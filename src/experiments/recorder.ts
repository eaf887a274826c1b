/**
 * Experiment accounting on the request path (docs/experiments.md): `begin` sets trajectory members and decides
 * whether a step counts (once per (trajectory, step)); `recordBatch` adds the counters (step-counts.ts).
 */
import type { Logger } from '../logging.js';
import type { BatchResult } from '../dispatch/batch.js';
import type { GatewayMetrics } from '../metrics.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { BatchPlan, CompiledRoute, CompiledRoutes, InputPlan } from '../routing/plan.js';
import type { GatewayRuntime } from '../runtime.js';
import type { StoreHealth, StorePorts } from '../state/types.js';
import { boundCountersKey, countersKey, field, keyCountersKey, keys, parseTrajectoryRecord, type TrajectoryRecord } from './keys.js';
import { endOfReplay, lastStepOf, replayStep, type CacheHit } from './replay.js';
import { hmacSigner, loadTagSecret } from './tag-signer.js';
import { hasFlag, withFlag, type TagSigner, type TrajectoryState } from '../protocol/memory-tag.js';
import { Lifetimes } from './lifetime.js';
import { countBatch } from './step-counts.js';
import { isExperiment, routeIndex, trajectoryArm, type StepDecision } from './step-decision.js';
import { StepIndex } from './step-index.js';
import { advance, forkedId, forkStart, requestKey, stepFeedback } from './trajectory.js';
import { keyId, MISSING_VALUE, UnitSlots, valueText } from './units.js';
import { compileInputPath } from '../routing/match.js';
import type { RoutingInput } from '../routing/routing-input.js';
import type { GatewayConfig } from '../config/schema.js';

type ExperimentsConfig = GatewayConfig['experiments'];

export type ExperimentsStore = Pick<StorePorts, 'counters' | 'claims' | 'lists' | 'shared'> & Pick<StoreHealth, 'kind' | 'stats'>;

/** Late-bound, so a config reload is seen at once. */
export interface ExperimentsHost {
  current: Pick<GatewayRuntime, 'agents' | 'config' | 'upstreams'>;
  store: ExperimentsStore;
  metrics: GatewayMetrics;
}

/** Sent by `magma-gateway check`: its requests never enter an experiment. */
export const CHECK_HEADER = 'x-magma-gateway-check';

const ZERO = { s: 0, n: 0, step: 0, stages: 0, flags: '' };

/** Past this the memory is dropped and rebuilt from the store. */
const FULL_REMEMBERED = 1000;

/**
 * The bound on what one experiment stores (docs/experiments.md#bounds-and-sizing): a cluster counter read before
 * each admission, admissions of one process checked one at a time per experiment. Once an experiment is full this
 * process remembers it: a count only grows within an experiment.
 */
class TrajectoryBound {
  private readonly full = new Set<string>();
  /** The last admission still deciding: the next one waits for it. */
  private readonly deciding = new Map<string, Promise<boolean>>();

  admit(store: Pick<StorePorts, 'counters'>, counterKey: string, max: number): Promise<boolean> {
    if (this.full.has(counterKey)) return Promise.resolve(false);
    const before = this.deciding.get(counterKey) ?? Promise.resolve(true);
    const mine = before.then(
      () => this.check(store, counterKey, max),
      () => this.check(store, counterKey, max),
    );
    this.deciding.set(counterKey, mine);
    const forget = (): void => {
      if (this.deciding.get(counterKey) === mine) this.deciding.delete(counterKey);
    };
    mine.then(forget, forget);
    return mine;
  }

  private async check(store: Pick<StorePorts, 'counters'>, counterKey: string, max: number): Promise<boolean> {
    if (this.full.has(counterKey)) return false;
    // The read includes this process's increments not yet sent, so the admissions before this one are in it.
    const recorded = (await store.counters.read(counterKey)).recorded ?? 0;
    if (recorded >= max) {
      if (this.full.size >= FULL_REMEMBERED) this.full.clear();
      this.full.add(counterKey);
      return false;
    }
    store.counters.incr(counterKey, 'recorded');
    return true;
  }
}

export class Experiments {
  readonly lifetimes = new Lifetimes();
  /** Outcomes and the report wait for these. */
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly host: () => ExperimentsHost,
    private readonly log?: Pick<Logger, 'warn'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private readonly stepIndex = new StepIndex(this.lifetimes, () => this.now());

  private readonly slots = new UnitSlots();
  private readonly bound = new TrajectoryBound();
  private readonly readers = new Map<string, (input: RoutingInput) => unknown>();

  private readonly srmLogged = new Set<string>();

  srmFlagged(agent: string, route: string, experiment: string, line: string): void {
    if (this.srmLogged.has(experiment)) return;
    if (this.srmLogged.size > 10_000) this.srmLogged.clear();
    this.srmLogged.add(experiment);
    this.log?.warn({ agent, route, experiment }, line);
  }

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

  private signerFor: { secret: string | undefined; store: ExperimentsStore; signer: Promise<TagSigner> } | undefined;

  /** Undefined while the store cannot give a shared secret: the recorder then counts nothing either. */
  async tagSigner(): Promise<TagSigner | undefined> {
    const { store, current } = this.host();
    const secret = current.config.experiments.tag_secret;
    if (this.signerFor === undefined || this.signerFor.secret !== secret || this.signerFor.store !== store) {
      this.signerFor = { secret, store, signer: loadTagSecret(secret, process.env, store).then(hmacSigner) };
    }
    const pending = this.signerFor;
    try {
      const signer = await pending.signer;
      this.signerWarned = false;
      return signer;
    } catch (err) {
      if (this.signerFor === pending) this.signerFor = undefined; // tried again on the next batch
      if (!this.signerWarned) this.log?.warn({ err }, 'memory tag secret unavailable: tags are neither signed nor checked until the store answers');
      this.signerWarned = true;
      return undefined;
    }
  }

  private signerWarned = false;

  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private track(p: Promise<unknown>): void {
    const done = p.catch((err: unknown) => this.log?.warn({ err }, 'experiment index write failed')).finally(() => this.pending.delete(done));
    this.pending.add(done);
  }

  /** Never fails the batch: on a store failure the inputs go out without trajectory members and are not counted. */
  async begin(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, excluded: boolean, hits?: ReadonlyMap<number, CacheHit>): Promise<StepDecision[]> {
    if (excluded || !compiled.routes.some(isExperiment)) return [];
    try {
      return await this.decide(compiled, request, plan, hits);
    } catch (err) {
      this.log?.warn({ err }, 'experiment accounting failed for a batch');
      return [];
    }
  }

  private async decide(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, hits: ReadonlyMap<number, CacheHit> | undefined): Promise<StepDecision[]> {
    const { store, current } = this.host();
    const { experiments: cfg } = current.config;
    const ttlMs = cfg.index_ttl_s * 1000;
    const routes = routeIndex(compiled);
    const agent = compiled.agent;
    const signer = await this.tagSigner();
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
          const hit = hits?.get(p.index);
          // A new trajectory the cache answers takes the arm that produced the answer, and stays there.
          if (hit !== undefined && !continuing && route.kind === 'split' && route.members.some((m) => m.name === hit.backend)) p.arm = hit.arm ?? hit.backend;
          const arm = trajectoryArm(route, p, continuing);
          if (arm === undefined) return undefined;
          const key = requestKey(cfg.salt, request.request_id, input.id);
          const instruction = input.instruction;
          const feedback = stepFeedback(instruction);
          const sign = (t: TrajectoryState): TrajectoryState => Object.assign({}, t, { signer });
          if (p.rejectedTag !== undefined || hasFlag(previous, 'r')) {
            // Not trusted (docs/experiments.md#signed-tags): a trajectory of its own, never counted.
            const state = sign(withFlag(advance(previous, { id: key, experiment }, instruction, feedback), 'r'));
            p.trajectory = state;
            const first = p.rejectedTag === undefined ? false : (await store.claims.claim(keys.step(state.id, state.step), key, ttlMs)).first;
            const base = { index: p.index, route, arm, experiment, state, base: ZERO, counted: false, newUnit: false, cached: hit !== undefined, keyless: false, keysOver: false };
            return first && p.rejectedTag !== undefined ? Object.assign({}, base, { rejected: p.rejectedTag }) : base;
          }
          const boundKey = boundCountersKey(agent, route.name, experiment);
          if (hasFlag(previous, 'o')) return this.leftOut(p, sign(advance(previous, { id: key, experiment }, instruction, feedback)), undefined);
          if (!continuing && !(await this.bound.admit(store, boundKey, cfg.max_trajectories))) {
            return this.leftOut(p, sign(advance(undefined, { id: key, experiment }, instruction, feedback)), { agent, route: route.name, experiment, arm });
          }
          const unit = continuing ? undefined : await this.newUnit(store, cfg, agent, route, p, input, experiment, key, ttlMs);
          const common = { index: p.index, route, arm, cached: hit !== undefined, keyless: unit?.keyless === true, keysOver: unit?.keysOver === true };
          const advanced = advance(previous, { id: key, experiment, ...unit?.members }, instruction, feedback);
          const { replay: _was, ...live } = advanced;

          let step = replayStep(previous, experiment, hit);
          let inherit: { id: string; record: TrajectoryRecord } | undefined;
          if (step.kind === 'ended') {
            const resolved = await this.endReplay(store, step, ttlMs, advanced.id);
            if (resolved.kind === 'continue') step = { kind: 'replay', of: resolved.of };
            else if (resolved.kind === 'supersede') inherit = resolved.inherit;
          }
          if (step.kind === 'replay') {
            // Not counted: the original's steps were. An outcome posted for this id credits the original.
            const state = sign(Object.assign({}, advanced, { replay: step.of }));
            p.trajectory = state;
            this.track(store.claims.claim(keys.replayOf(state.id), step.of, ttlMs));
            return Object.assign({}, common, { experiment: state.experiment, state, base: ZERO, counted: false, newUnit: false, replay: { of: step.of, first: !continuing } });
          }
          let state: TrajectoryState = live;
          let base = previous ?? ZERO;
          let newUnit = !continuing;
          if (step.kind === 'ended' && inherit === undefined) {
            // Diverged from a finished prefix: a unit of its own, counted with the whole history it carries.
            base = ZERO;
            newUnit = true;
          }
          let mark = await store.claims.claim(keys.step(state.id, state.step), key, ttlMs);
          if (!mark.first && mark.value !== key && previous !== undefined) {
            // A fork (docs/experiments.md#forks): its own trajectory, counting only what comes after.
            state = advance(forkStart(previous, forkedId(previous.id, key)), { id: key, experiment }, instruction, feedback);
            const { replay: _r, ...forked } = state;
            state = forked;
            if (!(await this.bound.admit(store, boundKey, cfg.max_trajectories))) return this.leftOut(p, sign(state), { agent, route: route.name, experiment, arm });
            base = ZERO;
            newUnit = true;
            inherit = undefined;
            mark = await store.claims.claim(keys.step(state.id, state.step), key, ttlMs);
          }
          const counted = mark.first;
          state = sign(state);
          p.trajectory = state;
          const d: StepDecision = Object.assign({}, common, { experiment: state.experiment, state, base, counted, by: key, newUnit }, inherit === undefined ? {} : { supersedes: inherit });
          if (counted && newUnit && p.drawnArm !== undefined) {
            return Object.assign({}, d, { rerouted: { from: p.drawnArm, why: this.whyUnservable(p.drawnArm) } });
          }
          return d;
        })(),
      );
    }
    const decided = (await Promise.all(work)).filter((d): d is StepDecision => d !== undefined);
    const rejected = decided.filter((d) => d.rejected !== undefined);
    if (rejected.length > 0) {
      this.log?.warn(
        { agent, request_id: request.request_id, rejected_tags: rejected.length, reasons: [...new Set(rejected.map((d) => d.rejected))], routes: [...new Set(rejected.map((d) => d.route.name))] },
        'memory tags not trusted: those inputs start new trajectories that are never counted (docs/experiments.md#signed-tags)',
      );
    }
    return decided;
  }

  /** Where an ended replay goes (replay.ts endOfReplay); of two resumed copies, one takes the original over. */
  private async endReplay(
    store: ExperimentsStore,
    ended: { of: string; replayed: number; next?: string },
    ttlMs: number,
    trajectory: string,
  ): Promise<{ kind: 'continue'; of: string } | { kind: 'supersede'; inherit: { id: string; record: TrajectoryRecord } } | { kind: 'diverge' }> {
    const successor = await store.claims.read(keys.superseded(ended.of));
    const how = endOfReplay(ended, successor, lastStepOf(await store.claims.members(keys.steps(successor ?? ended.of))));
    if (how === 'continue' && successor !== undefined) return { kind: 'continue', of: successor };
    if (how !== 'supersede') return { kind: 'diverge' };
    const record = parseTrajectoryRecord(await store.claims.read(keys.trajectory(ended.of)));
    if (record === undefined) return { kind: 'diverge' };
    const took = await store.claims.claim(keys.superseded(ended.of), trajectory, ttlMs);
    return took.first || took.value === trajectory ? { kind: 'supersede', inherit: { id: ended.of, record } } : { kind: 'diverge' };
  }

  /** Past experiments.max_trajectories: flagged `o`, so its later steps skip the store. */
  private leftOut(p: InputPlan, state: TrajectoryState, started: { agent: string; route: string; experiment: string; arm: string } | undefined): undefined {
    p.trajectory = withFlag(state, 'o');
    if (started !== undefined) {
      this.host().store.counters.incr(countersKey(started.agent, started.route, started.experiment), field.count(started.arm, 'leftOut'));
      this.host().metrics.trajectoriesLeftOut.inc({ agent: started.agent, route: started.route });
    }
    return undefined;
  }

  /** From the first input only (units.ts): they travel in the tag, and a fork inherits its parent's. */
  private async newUnit(
    store: Pick<StorePorts, 'claims' | 'counters'>,
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
    const admitted = await this.slots.keyAdmitted(store, experiment, id, cfg.max_keys, ttlMs, keyCountersKey(agent, route.name, experiment));
    if (admitted) members.key = id;
    return { members, keyless, keysOver: !admitted };
  }

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

  /**
   * Counts and indexes the batch's steps once its answer is the client's (docs/experiments.md#replays-and-resumed-episodes).
   * An answer the client never got (it left, and no retry will be answered from the replay store) counts nothing,
   * and its steps' marks are given back: a retry of the same request counts them, and a resumed episode takes over
   * a trajectory whose last indexed step is the last one its client received. Never throws: accounting must not
   * cost a client its answer.
   */
  recordBatch(compiled: CompiledRoutes, request: IndexedAgentRequest, plan: BatchPlan, result: BatchResult, decisions: readonly StepDecision[], delivered: boolean): void {
    try {
      const { store, metrics, current } = this.host();
      const cfg = current.config.experiments;
      const counted = decisions.filter((d) => d.counted);
      if (!delivered) {
        for (const d of counted) {
          if (d.by !== undefined) this.track(store.claims.release(keys.step(d.state.id, d.state.step), d.by));
          if (d.supersedes !== undefined) this.track(store.claims.release(keys.superseded(d.supersedes.id), d.state.id));
        }
        return;
      }
      const sink = { store, metrics, ttlMs: cfg.index_ttl_s * 1000, now: this.now, track: (w: Promise<unknown>) => this.track(w) };
      countBatch(sink, compiled, request, plan, result, decisions);
      for (const d of counted) this.track(this.stepIndex.write(store, metrics, compiled.agent, d, cfg));
    } catch (err) {
      this.log?.warn({ err }, 'experiment accounting failed for a batch');
    }
  }
}
