/**
 * Earlier experiments keep their final report (docs/console.md#history): when an experiment ends, its last
 * report (verdict, arms, comparisons with their intervals) is appended to a capped list in the store, so the
 * console opens an earlier experiment like the current one. An experiment ends by a reset (its report is taken
 * just before, exact) or by a config change of its arms or weights (its report as the last snapshot saw it, at
 * most one `experiments.snapshot_interval_s` old). Each route's latest report is kept as a shared value between
 * snapshots; a claim per experiment id makes one final per experiment, whichever replica notices first.
 */
import type { ExperimentReport, ExperimentsReport } from './report.js';

/** The store list of final reports (the store adds its own prefix). */
export const FINALS_KEY = 'experiments:finals';
/** Final reports kept, the oldest dropped. */
export const FINALS_MAX = 200;
/** How long the list and a route's latest report live after their last write: 30 days. */
const FINALS_TTL_MS = 30 * 24 * 3600 * 1000;

export interface FinalsStore {
  claim(key: string, value: string, ttlMs: number): Promise<{ first: boolean }>;
  pushCapped(key: string, value: string, max: number, ttlMs: number): Promise<void>;
  readList(key: string): Promise<string[]>;
  setShared(key: string, value: string, ttlMs: number): Promise<void>;
  getShared(key: string): Promise<string | undefined>;
}

const latestKey = (e: { agent: string; route: string }): string => `experiments:latest:${e.agent}/${e.route}`;

/** Appends `e` as its experiment's final report, once per experiment id. */
export async function keepFinal(store: FinalsStore, e: ExperimentReport, endedAt: string): Promise<void> {
  if (!(await store.claim(`experiments:final:${e.experiment.id}`, endedAt, FINALS_TTL_MS)).first) return;
  await store.pushCapped(FINALS_KEY, JSON.stringify({ ...e, ended_at: endedAt }), FINALS_MAX, FINALS_TTL_MS);
}

/**
 * At each snapshot: a route whose experiment id changed since the last one keeps the earlier experiment's last
 * report as its final; then each route's report becomes its latest.
 */
export async function noteReport(store: FinalsStore, report: ExperimentsReport): Promise<void> {
  for (const e of report.experiments) {
    const raw = await store.getShared(latestKey(e));
    if (raw !== undefined) {
      try {
        const before = JSON.parse(raw) as ExperimentReport; // written below
        if (before.experiment.id !== e.experiment.id) await keepFinal(store, before, e.experiment.started_at ?? report.generated_at);
      } catch {
        // not a report of ours
      }
    }
    await store.setShared(latestKey(e), JSON.stringify(e), FINALS_TTL_MS);
  }
}

/** The final reports kept, newest first, one per experiment id. */
export async function readFinals(store: Pick<FinalsStore, 'readList'>): Promise<unknown[]> {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const raw of (await store.readList(FINALS_KEY)).reverse()) {
    try {
      const v = JSON.parse(raw) as { experiment?: { id?: unknown } }; // the id is checked next
      const id = v.experiment?.id;
      if (typeof id !== 'string' || seen.has(id)) continue;
      seen.add(id);
      out.push(v);
    } catch {
      // not a report of ours
    }
  }
  return out;
}
