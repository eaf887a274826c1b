/**
 * The outcome index of a counted step (docs/experiments.md#outcomes-from-bench): the trace hash an imported episode
 * is matched by, the trajectory's step set (its last step is the export row), and a new unit's records.
 */
import type { StorePorts } from '../state/types.js';
import type { TrajectoryState } from '../protocol/memory-tag.js';
import type { GatewayConfig } from '../config/schema.js';
import { countersKey, field, keys, type ExperimentRecord, type ScalarCount, type TrajectoryRecord } from './keys.js';
import { epochTaken, type Lifetimes } from './lifetime.js';
import type { StepDecision } from './step-decision.js';
import type { GatewayMetrics } from '../metrics.js';

/** BENCH episodes have tens of steps; past this a trajectory's outcome join and export row stop advancing. */
export const MAX_STEPS_INDEXED = 1000;
const MAX_EXPERIMENTS_LISTED = 1000;

export class StepIndex {
  private readonly recorded = new Set<string>();

  constructor(
    private readonly lifetimes: Lifetimes,
    private readonly now: () => Date,
  ) {}

  async write(store: Pick<StorePorts, 'claims' | 'shared' | 'counters'>, metrics: GatewayMetrics, agent: string, d: StepDecision, cfg: GatewayConfig['experiments']): Promise<void> {
    const ttlMs = cfg.index_ttl_s * 1000;
    const { state } = d;
    // A write an index bound leaves out is counted per arm, never silently dropped.
    const counted = (over: ScalarCount, index: string) => (kept: boolean): void => {
      if (kept) return;
      store.counters.incr(countersKey(agent, d.route.name, d.experiment), field.count(d.arm, over));
      metrics.indexDropped.inc({ agent, route: d.route.name, index });
    };
    const exported = counted('exportOver', 'export');
    const writes: Promise<unknown>[] = [
      store.claims.addMember(keys.hash(state.hash), `${state.id}:${state.step}`, ttlMs, cfg.hash_candidates_max).then(counted('hashOver', 'trace_hash')),
      store.claims.addMember(keys.steps(state.id), stepMember(state), ttlMs, MAX_STEPS_INDEXED).then(counted('stepsOver', 'steps')),
    ];
    if (d.supersedes !== undefined) {
      // The resumed trajectory takes the superseded one's record and export place over.
      writes.push(store.claims.addMember(keys.trajectories(d.experiment), state.id, ttlMs, cfg.export_max_trajectories).then(exported));
      writes.push(store.claims.claim(keys.trajectory(state.id), JSON.stringify(d.supersedes.record), ttlMs));
    }
    if (d.newUnit) {
      writes.push(store.claims.addMember(keys.trajectories(d.experiment), state.id, ttlMs, cfg.export_max_trajectories).then(exported));
      const at = this.now().toISOString();
      const rec: TrajectoryRecord = { agent, route: d.route.name, experiment: d.experiment, arm: d.arm, started_at: at };
      if (state.stratum !== undefined) rec.stratum = state.stratum;
      if (state.key !== undefined) rec.key = state.key;
      writes.push(store.claims.claim(keys.trajectory(state.id), JSON.stringify(rec), ttlMs));
      if (!this.recorded.has(d.experiment)) {
        this.recorded.add(d.experiment);
        // A reset experiment started at its reset, whenever its first trajectory came; one a reload started after
        // that reset, with its first trajectory (lifetime.ts, epochTaken).
        const epoch = await this.lifetimes.epoch(store, agent, d.route.name);
        const reset = epoch !== undefined && !(await epochTaken(store, agent, d.route.name, d.experiment, epoch));
        const exp: ExperimentRecord = { agent, route: d.route.name, name: d.route.experiment.name ?? null, started_at: reset ? epoch : at };
        writes.push(store.claims.claim(keys.experiment(d.experiment), JSON.stringify(exp), ttlMs));
        writes.push(store.claims.addMember(keys.list(agent, d.route.name), d.experiment, ttlMs, MAX_EXPERIMENTS_LISTED));
      }
    }
    await Promise.all(writes);
  }
}

function stepMember(t: TrajectoryState): string {
  return `${t.step}|${t.s}|${t.n}|${t.stages}|${t.flags}`;
}
