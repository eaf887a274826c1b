/**
 * Earlier experiments keep their final report (docs/console.md#history): taken just before a reset (exact), or for a
 * config change of arms or weights, the last snapshot's (at most one snapshot interval old). A claim per experiment
 * id makes one final per experiment, whichever replica notices first.
 */
import { isJsonObject, parseJsonOrUndefined } from '../../protocol/schemas.js';
import type { ExperimentsStore } from '../recorder.js';
import type { ExperimentReport, ExperimentsReport } from './report.js';

const FINALS_KEY = 'experiments:finals';
const FINALS_MAX = 200;
/** After the last write. */
const FINALS_TTL_MS = 30 * 24 * 3600 * 1000;

type FinalsStore = Pick<ExperimentsStore, 'claims' | 'lists' | 'shared'>;

const latestKey = (e: { agent: string; route: string }): string => `experiments:latest:${e.agent}/${e.route}`;

export async function keepFinal(store: FinalsStore, e: ExperimentReport, endedAt: string): Promise<void> {
  if (!(await store.claims.claim(`experiments:final:${e.experiment.id}`, endedAt, FINALS_TTL_MS)).first) return;
  await store.lists.push(FINALS_KEY, JSON.stringify({ ...e, ended_at: endedAt }), FINALS_MAX, FINALS_TTL_MS);
}

/** At each snapshot: a route whose experiment id changed keeps the earlier experiment's last report as its final. */
export async function noteReport(store: FinalsStore, report: ExperimentsReport): Promise<void> {
  for (const e of report.experiments) {
    const raw = await store.shared.get(latestKey(e));
    if (raw !== undefined) {
      try {
        const before = JSON.parse(raw) as ExperimentReport; // written below
        if (before.experiment.id !== e.experiment.id) await keepFinal(store, before, e.experiment.started_at ?? report.generated_at);
      } catch {
        // not a report of ours
      }
    }
    await store.shared.set(latestKey(e), JSON.stringify(e), FINALS_TTL_MS);
  }
}

/** Newest first, one per experiment id. */
export async function readFinals(store: Pick<FinalsStore, 'lists'>): Promise<unknown[]> {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const raw of (await store.lists.read(FINALS_KEY)).reverse()) {
    const v = parseJsonOrUndefined(raw);
    const id = isJsonObject(v) && isJsonObject(v.experiment) ? v.experiment.id : undefined;
    // Not a report of ours, or an experiment already listed.
    if (typeof id !== 'string' || seen.has(id)) continue;
    seen.add(id);
    out.push(v);
  }
  return out;
}
