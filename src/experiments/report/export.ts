/**
 * The per-trajectory export (`GET /gateway/experiments/trajectories`, docs/experiments.md#export), as JSON lines or
 * CSV, bounded by experiments.export_max_trajectories per experiment.
 */
import { keys, parseTrajectoryRecord } from '../keys.js';
import type { ReportHost } from './report.js';

export interface TrajectoryRow {
  agent: string;
  route: string;
  arm: string;
  experiment: string;
  trajectory: string;
  started: string;
  steps: number;
  s: number;
  n: number;
  stages: number;
  env_errors: boolean;
  failure_reason: boolean;
  error_candidates: boolean;
  crossed: boolean;
  /** True / false / the score; null without an outcome. */
  outcome: boolean | number | null;
}

export const ROW_FIELDS: readonly (keyof TrajectoryRow)[] = [
  'agent', 'route', 'arm', 'experiment', 'trajectory', 'started', 'steps', 's', 'n', 'stages', 'env_errors',
  'failure_reason', 'error_candidates', 'crossed', 'outcome',
];

function outcomeOf(raw: string | undefined): boolean | number | null {
  if (raw === undefined) return null;
  if (raw === 'success:1') return true;
  if (raw === 'success:0') return false;
  const score = raw.startsWith('score:') ? Number(raw.slice(6)) : Number.NaN;
  return Number.isFinite(score) ? score : null;
}

async function row(host: ReportHost, id: string): Promise<TrajectoryRow | undefined> {
  const [rec, steps, outcome, superseded] = await Promise.all([
    host.store.claims.read(keys.trajectory(id)),
    host.store.claims.members(keys.steps(id)),
    host.store.claims.read(keys.outcome(id)),
    host.store.claims.read(keys.superseded(id)),
  ]);
  const r = parseTrajectoryRecord(rec);
  // A superseded trajectory is no unit: the resumed one that took it over has the row (docs/experiments.md#export).
  if (r === undefined || superseded !== undefined) return undefined;
  let last: [number, number, number, number] = [0, 0, 0, 0];
  let flags = '';
  for (const m of steps) {
    const [step, s, n, stages, f] = m.split('|');
    const v: [number, number, number, number] = [Number(step), Number(s), Number(n), Number(stages)];
    if (v.every(Number.isFinite) && v[0] > last[0]) {
      last = v;
      flags = f ?? '';
    }
  }
  return {
    agent: r.agent, route: r.route, arm: r.arm, experiment: r.experiment, trajectory: id, started: r.started_at,
    steps: last[0], s: last[1], n: last[2], stages: last[3],
    env_errors: flags.includes('e'), failure_reason: flags.includes('f'), error_candidates: flags.includes('c'),
    crossed: flags.includes('x'), outcome: outcomeOf(outcome),
  };
}

export async function trajectoryRows(host: ReportHost): Promise<TrajectoryRow[]> {
  await host.experiments.settled();
  const out: TrajectoryRow[] = [];
  for (const agent of host.current.agents.all) {
    for (const route of agent.routes.routes) {
      if (route.kind === 'backend') continue;
      const id = await host.experiments.lifetimes.id(host.store, agent.name, route);
      const ids = await host.store.claims.members(keys.trajectories(id));
      const rows = (await Promise.all(ids.map((t) => row(host, t)))).filter((r): r is TrajectoryRow => r !== undefined);
      rows.sort((a, b) => a.started.localeCompare(b.started) || (a.trajectory < b.trajectory ? -1 : 1));
      out.push(...rows);
    }
  }
  return out;
}

function csvCell(v: unknown): string {
  const t = v === null ? '' : String(v);
  return /[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}

export function rowsAsCsv(rows: readonly TrajectoryRow[]): string {
  const lines = [ROW_FIELDS.join(','), ...rows.map((r) => ROW_FIELDS.map((f) => csvCell(r[f])).join(','))];
  return `${lines.join('\n')}\n`;
}

export function rowsAsJsonLines(rows: readonly TrajectoryRow[]): string {
  return rows.map((r) => `${JSON.stringify(r)}\n`).join('');
}
