/**
 * The experiment history (docs/console.md#experiments): every `experiments.snapshot_interval_s` one point of
 * the report (below) is appended to a capped list in the store, the last
 * `experiments.snapshot_points` kept. With Redis, every replica runs the timer but only one writes each
 * interval: the first to claim the interval's slot (SET NX), so the history is the same whichever replica
 * answers `GET /gateway/experiments/history`; with the memory store it is this process's own.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../logging.js';
import { experimentsReport, type ExperimentReport, type ExperimentsReport } from './report.js';
import { noteReport } from './finals.js';

/** How often, at most, a replica looks for an experiment's first result (docs/console.md#history). */
const FIRST_RESULT_CHECK_MS = 5000;

/** A result to chart: a comparison with a difference, or an ensemble with trajectories (its rates). */
function hasResult(e: ExperimentReport): boolean {
  if (e.kind === 'ensemble') return e.arms.some((a) => a.trajectories > 0);
  return e.comparisons.some((c) => (c.fixed?.difference ?? c.sequential?.difference ?? null) !== null);
}

/*
 * One point of the experiment history (`GET /gateway/experiments/history`, docs/console.md): per current
 * experiment, each comparison's difference with its fixed and always-valid 95% intervals, and the trajectories
 * of each arm, as the report showed them at that time. Built from the report's agreed JSON (`experiments[]`,
 * `arms[]`, `comparisons[]` with `fixed` / `sequential`); `reportView` below is the one place that reads the
 * report, so a change of the report's shape changes only it.
 */

type Interval = [number, number];

/** The parts of the report's agreed shape a history point needs; every other field is left alone. */
export interface ReportView {
  experiments: {
    agent: string;
    route: string;
    experiment: { id: string };
    arms: { arm: string; trajectories: number }[];
    comparisons: {
      arm: string;
      control: string;
      metric: string;
      primary?: boolean;
      fixed: { difference: number | null; ci95: Interval | null } | null;
      sequential: { difference: number | null; ci95: Interval | null } | null;
    }[];
  }[];
}

export interface HistoryComparison {
  arm: string;
  control: string;
  metric: string;
  difference: number | null;
  fixed_ci95: Interval | null;
  /** Null while the always-valid interval is not shown (before its burn-in, or for a secondary metric). */
  sequential_ci95: Interval | null;
}

export interface HistoryExperiment {
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

export function pointFromReport(report: ReportView, at: number): HistoryPoint {
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


/** The running report, which is in the agreed shape: every part a point reads is there as it is. */
export function reportView(report: ExperimentsReport): ReportView {
  return report;
}

/** The store list of snapshots (the store adds its own prefix). */
export const HISTORY_KEY = 'experiments:history';

/** Wall-clock time in ms since the epoch (the slot of an interval is the same on every replica), and timers. */
export interface HistoryClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

const wallClock: HistoryClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref(); // the history never keeps the process alive
    return t;
  },
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>), // only handles setTimer made come back
};

/** What the report needs (whatever that is), and the history's two settings. */
type ReportHost = Parameters<typeof experimentsReport>[0];
type HistoryHost = ReportHost & {
  current: ReportHost['current'] & { config: { experiments: { snapshot_interval_s: number; snapshot_points: number } } };
};

export class ExperimentHistory {
  private timer: unknown;
  private watch: unknown;
  /** Experiment ids with a result in a point already: their first point is taken. */
  private readonly resulted = new Set<string>();
  /** Who wrote a slot, for someone reading the claims in Redis. */
  private readonly id = randomUUID();
  private stopped = false;

  constructor(
    private readonly host: () => HistoryHost,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly clock: HistoryClock = wallClock,
  ) {}

  private get settings(): { intervalMs: number; points: number } {
    const e = this.host().current.config.experiments;
    return { intervalMs: e.snapshot_interval_s * 1000, points: e.snapshot_points };
  }

  /** Snapshots at each interval boundary from now on (read from the running config each time: a reload changes it). */
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

  /**
   * The first point of an experiment as soon as it has a result, not at the next interval's boundary: checked
   * every FIRST_RESULT_CHECK_MS (or the interval, when shorter). One replica writes it (a claim per experiment).
   * True when it wrote.
   */
  async firstResults(): Promise<boolean> {
    const { intervalMs, points } = this.settings;
    try {
      const host = this.host();
      const report = await experimentsReport(host);
      const fresh = report.experiments.filter((e) => hasResult(e) && !this.resulted.has(e.experiment.id));
      if (fresh.length === 0) return false;
      for (const e of fresh) this.resulted.add(e.experiment.id);
      const claims = await Promise.all(fresh.map((e) => host.store.claim(`${HISTORY_KEY}:first:${e.experiment.id}`, this.id, 2 * points * intervalMs)));
      if (!claims.some((c) => c.first)) return false;
      await host.store.pushCapped(HISTORY_KEY, JSON.stringify(pointFromReport(reportView(report), this.clock.now())), points, 2 * points * intervalMs);
      return true;
    } catch (err) {
      this.log.warn({ err }, 'experiment history: first-result snapshot failed');
      return false;
    }
  }

  /**
   * One interval's snapshot: written when this replica is the first to claim the interval's slot. True when it
   * wrote. Never throws (a failed snapshot is a gap in the chart, logged).
   */
  async snapshot(): Promise<boolean> {
    const { intervalMs, points } = this.settings;
    const now = this.clock.now();
    const slot = Math.floor(now / intervalMs);
    try {
      const host = this.host();
      // The claim outlives its interval, so a replica whose timer fires late cannot write the same slot twice.
      if (!(await host.store.claim(`${HISTORY_KEY}:slot:${intervalMs}:${slot}`, this.id, 2 * intervalMs)).first) return false;
      const report = await experimentsReport(host);
      const point = pointFromReport(reportView(report), now);
      // Kept as long as the whole history spans, twice over, then forgotten if nobody writes any more.
      await host.store.pushCapped(HISTORY_KEY, JSON.stringify(point), points, 2 * points * intervalMs);
      for (const e of report.experiments) if (hasResult(e)) this.resulted.add(e.experiment.id);
      // An experiment that ended since the last snapshot (its arms changed) keeps its last report (finals.ts).
      await noteReport(host.store, report);
      return true;
    } catch (err) {
      this.log.warn({ err }, 'experiment history: snapshot failed');
      return false;
    }
  }

  /** Every point kept, oldest first; entries that do not parse (written by something else) are skipped. */
  async read(): Promise<HistoryPoint[]> {
    const raw = await this.host().store.readList(HISTORY_KEY);
    const out: HistoryPoint[] = [];
    for (const r of raw) {
      try {
        const p = JSON.parse(r) as HistoryPoint; // written by snapshot() above; the fields read are checked next
        if (typeof p.at === 'string' && Array.isArray(p.experiments)) out.push(p);
      } catch {
        // not a point of ours
      }
    }
    return out;
  }

  private schedule(): void {
    if (this.stopped) return;
    const { intervalMs } = this.settings;
    const now = this.clock.now();
    // At the next boundary of the interval, the same instant on every replica.
    const wait = intervalMs - (now % intervalMs);
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
