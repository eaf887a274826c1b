/**
 * The experiment history (docs/console.md#experiments): one report point per `experiments.snapshot_interval_s`,
 * written by the first replica to claim the interval's slot.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../logging.js';
import { parseJsonOrUndefined } from '../../protocol/schemas.js';
import { experimentsReport, type ExperimentReport, type ExperimentsReport, type ReportHost } from './report.js';
import { noteReport } from './finals.js';
import type { LimiterClock } from '../../clients/client-limiter.js';

/** How often, at most, a replica looks for an experiment's first result (docs/console.md#history). */
const FIRST_RESULT_CHECK_MS = 5000;

function hasResult(e: ExperimentReport): boolean {
  if (e.kind === 'ensemble') return e.arms.some((a) => a.trajectories > 0);
  return e.comparisons.some((c) => (c.fixed?.difference ?? c.sequential?.difference ?? null) !== null);
}

type Interval = [number, number];

interface HistoryComparison {
  arm: string;
  control: string;
  metric: string;
  difference: number | null;
  fixed_ci95: Interval | null;
  /** Null before its burn-in, or for a secondary metric. */
  sequential_ci95: Interval | null;
}

interface HistoryExperiment {
  id: string;
  agent: string;
  route: string;
  trajectories: Record<string, number>;
  comparisons: HistoryComparison[];
}

export interface HistoryPoint {
  at: string;
  experiments: HistoryExperiment[];
}

function pointFromReport(report: ExperimentsReport, at: number): HistoryPoint {
  return {
    at: new Date(at).toISOString(),
    experiments: report.experiments.map((e) => ({
      id: e.experiment.id,
      agent: e.agent,
      route: e.route,
      trajectories: Object.fromEntries(e.arms.map((a) => [a.arm, a.trajectories])),
      comparisons: e.comparisons.map((c) => ({
        arm: c.arm,
        control: c.control,
        metric: c.metric,
        difference: c.fixed?.difference ?? c.sequential?.difference ?? null,
        fixed_ci95: c.fixed?.ci95 ?? null,
        sequential_ci95: c.sequential?.ci95 ?? null,
      })),
    })),
  };
}

export const HISTORY_KEY = 'experiments:history';

/** Wall-clock ms, so an interval's slot is the same on every replica. */
const wallClock: LimiterClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref(); // the history never keeps the process alive
    return t;
  },
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>), // only handles setTimer made come back
};

export class ExperimentHistory {
  private timer: unknown;
  private watch: unknown;
  private readonly resulted = new Set<string>();
  private readonly id = randomUUID();
  private stopped = false;

  constructor(
    private readonly host: () => ReportHost,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly clock: LimiterClock = wallClock,
  ) {}

  private get settings(): { intervalMs: number; points: number } {
    const e = this.host().current.config.experiments;
    return { intervalMs: e.snapshot_interval_s * 1000, points: e.snapshot_points };
  }

  /** Read from the running config each time: a reload changes it. */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    if (this.watch !== undefined) this.clock.clearTimer(this.watch);
    this.timer = undefined;
    this.watch = undefined;
  }

  /** An experiment's first point as soon as it has a result, not at the next boundary; one replica writes it. */
  async firstResults(): Promise<boolean> {
    const { intervalMs, points } = this.settings;
    try {
      const host = this.host();
      const report = await experimentsReport(host);
      const fresh = report.experiments.filter((e) => hasResult(e) && !this.resulted.has(e.experiment.id));
      if (fresh.length === 0) return false;
      for (const e of fresh) this.resulted.add(e.experiment.id);
      const claims = await Promise.all(fresh.map((e) => host.store.claims.claim(`${HISTORY_KEY}:first:${e.experiment.id}`, this.id, 2 * points * intervalMs)));
      if (!claims.some((c) => c.first)) return false;
      await host.store.lists.push(HISTORY_KEY, JSON.stringify(pointFromReport(report, this.clock.now())), points, 2 * points * intervalMs);
      return true;
    } catch (err) {
      this.log.warn({ err }, 'experiment history: first-result snapshot failed');
      return false;
    }
  }

  /** Never throws: a failed snapshot is a gap in the chart, logged. */
  async snapshot(): Promise<boolean> {
    const { intervalMs, points } = this.settings;
    const now = this.clock.now();
    const slot = Math.floor(now / intervalMs);
    try {
      const host = this.host();
      // The claim outlives its interval, so a replica whose timer fires late cannot write the same slot twice.
      if (!(await host.store.claims.claim(`${HISTORY_KEY}:slot:${intervalMs}:${slot}`, this.id, 2 * intervalMs)).first) return false;
      const report = await experimentsReport(host);
      // Kept as long as the whole history spans, twice over, then forgotten if nobody writes any more.
      await host.store.lists.push(HISTORY_KEY, JSON.stringify(pointFromReport(report, now)), points, 2 * points * intervalMs);
      for (const e of report.experiments) if (hasResult(e)) this.resulted.add(e.experiment.id);
      await noteReport(host.store, report);
      return true;
    } catch (err) {
      this.log.warn({ err }, 'experiment history: snapshot failed');
      return false;
    }
  }

  /** Oldest first; entries written by something else are skipped. */
  async read(): Promise<HistoryPoint[]> {
    const out: HistoryPoint[] = [];
    for (const r of await this.host().store.lists.read(HISTORY_KEY)) {
      const p = parseJsonOrUndefined(r) as HistoryPoint | null | undefined; // written by snapshot() above; the fields read are checked next
      if (typeof p?.at === 'string' && Array.isArray(p.experiments)) out.push(p);
    }
    return out;
  }

  private schedule(): void {
    if (this.stopped) return;
    const { intervalMs } = this.settings;
    const wait = intervalMs - (this.clock.now() % intervalMs);
    this.timer = this.clock.setTimer(() => {
      void this.snapshot().finally(() => this.schedule());
    }, wait);
    if (this.watch === undefined) this.scheduleWatch();
  }

  private scheduleWatch(): void {
    if (this.stopped) return;
    this.watch = this.clock.setTimer(() => {
      void this.firstResults().finally(() => this.scheduleWatch());
    }, Math.min(FIRST_RESULT_CHECK_MS, this.settings.intervalMs));
  }
}
