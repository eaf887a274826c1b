/**
 * What the console tests expect the Experiments page to show, read from `GET /gateway/experiments` itself (never
 * constants): each experiment's arms with their trajectories, and its SRM flag. The one place the tests read the
 * report's JSON, so a change of its shape changes only this file (and console/src/report.ts for the page).
 */

export interface ExpectedExperiment {
  /** `<agent>/<route>`, the page's data-experiment. */
  key: string;
  arms: { arm: string; trajectories: number }[];
  /** undefined when the report has no SRM check (an ensemble, or a report without one). */
  srmFlagged: boolean | undefined;
}

type J = Record<string, unknown>;
const list = (v: unknown): J[] => (Array.isArray(v) ? (v as J[]) : []); // a test reading its own gateway's JSON

export function expectedExperiments(report: unknown): ExpectedExperiment[] {
  const r = report as J;
  if (Array.isArray(r.experiments)) {
    return list(r.experiments).map((e) => ({
      key: `${String(e.agent)}/${String(e.route)}`,
      arms: list(e.arms).map((a) => ({ arm: String(a.arm), trajectories: Number(a.trajectories) })),
      srmFlagged: e.srm === null || e.srm === undefined ? undefined : (e.srm as J).flagged === true,
    }));
  }
  // The report before experiments[]: the default agent's `routes`, each virtual agent's `agents[].routes`.
  const routes = [
    ...list(r.routes).map((x) => ({ agent: 'default', x })),
    ...list(r.agents).flatMap((a) => list(a.routes).map((x) => ({ agent: String(a.agent), x }))),
  ];
  return routes.map(({ agent, x }) => ({
    key: `${agent}/${String(x.route)}`,
    arms: list(x.arms).map((a) => ({ arm: String(a.arm), trajectories: Number(a.trajectories_started) })),
    srmFlagged: undefined,
  }));
}
