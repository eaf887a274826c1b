/**
 * One point of the experiment history (`GET /gateway/experiments/history`, docs/console.md): per current
 * experiment, each comparison's difference with its fixed and always-valid 95% intervals, and the trajectories
 * of each arm, as the report showed them at that time. Built from the report's agreed JSON (`experiments[]`,
 * `arms[]`, `comparisons[]` with `fixed` / `sequential`); `reportView` below is the one place that reads the
 * report, so a change of the report's shape changes only it.
 */
import type { ExperimentsReport } from './report.js';

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
