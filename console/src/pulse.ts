/**
 * `GET /gateway/pulse` as the Overview and Backends pages read it: the gateway's samples over the last hour
 * (docs/console.md#the-pulse), as columns for the charts (time in seconds, the way uPlot takes it).
 */
export interface PulseJson {
  interval_s: number;
  capacity: number;
  shared: boolean;
  points: {
    at: string;
    batches_per_s: number;
    error_candidates_per_s: number;
    overhead_ms: { p50: number | null; p95: number | null };
    backends: Record<string, { requests_per_s: number; failures_per_s: number; latency_ms: { p50: number | null; p95: number | null } }>;
  }[];
}

export interface PulseColumns {
  t: number[];
  batches: number[];
  errors: number[];
  overheadP50: (number | null)[];
  overheadP95: (number | null)[];
  backend(name: string): { latencyP50: (number | null)[]; latencyP95: (number | null)[]; failures: number[]; requests: number[] };
}

export function pulseColumns(p: PulseJson): PulseColumns {
  const pts = p.points;
  return {
    t: pts.map((x) => Date.parse(x.at) / 1000),
    batches: pts.map((x) => x.batches_per_s),
    errors: pts.map((x) => x.error_candidates_per_s),
    overheadP50: pts.map((x) => x.overhead_ms.p50),
    overheadP95: pts.map((x) => x.overhead_ms.p95),
    backend: (name) => ({
      // A backend no sub-request went to in an interval has no latency then (a gap), and 0 failures.
      latencyP50: pts.map((x) => x.backends[name]?.latency_ms.p50 ?? null),
      latencyP95: pts.map((x) => x.backends[name]?.latency_ms.p95 ?? null),
      failures: pts.map((x) => x.backends[name]?.failures_per_s ?? 0),
      requests: pts.map((x) => x.backends[name]?.requests_per_s ?? 0),
    }),
  };
}

/** Says how much history there is yet, for a chart's caption. */
export function span(p: PulseJson): string {
  const n = p.points.length;
  const s = n * p.interval_s;
  const shown = s >= 3600 ? `${Math.round(s / 360) / 10} h` : s >= 60 ? `${Math.round(s / 60)} min` : `${s} s`;
  return `${n === 0 ? 'no sample yet' : `the last ${shown}`}, one sample every ${p.interval_s} s${p.shared ? ', every replica' : ', this replica'}`;
}
