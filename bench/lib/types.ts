/** Shapes of the bench's results (latest.json in the results directory). */

export type ScenarioId = 'S1' | 'S2' | 'S3' | 'S4' | 'S5';
export type Role = 'direct' | 'baseline' | 'gateway';

export interface PhaseResult {
  round: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU ms per completed batch of the process in front (direct: the backend itself). */
  frontCpuMsPerBatch: number;
  /** CPU ms per completed batch of the backend process(es). */
  backendCpuMsPerBatch: number;
  /** CPU ms per completed batch of the load generator (it shares the machine's cores). */
  loadgenCpuMsPerBatch: number;
  /** Max sampled RSS of the front process during the measured phase, MB. */
  frontRssMaxMb: number;
  /** Load average (1 min) when the phase started: other work on the machine skews figures. */
  load1: number;
}

export interface TargetSummary {
  id: string;
  label: string;
  role: Role;
  /** Set when the target could not be started or answered wrongly: it was not measured. */
  error?: string;
  check?: { ok: boolean; problems: string[]; candidates: number; bytes: number; tags: Record<string, number> };
  rounds: PhaseResult[];
  median?: {
    rps: number;
    p50: number;
    p99: number;
    mean: number;
    frontCpuMsPerBatch: number;
    backendCpuMsPerBatch: number;
    loadgenCpuMsPerBatch: number;
    frontRssMaxMb: number;
    /** Peak RSS (VmHWM) of the front process over the whole scenario, MB. */
    frontHwmMb: number;
    rpsMin: number;
    rpsMax: number;
  };
  /** p50 / p99 added over the scenario's direct target, ms. */
  addedP50Ms?: number;
  addedP99Ms?: number;
}

export interface ScenarioResult {
  id: ScenarioId;
  title: string;
  params: Record<string, number | string | boolean>;
  targets: TargetSummary[];
  notes: string[];
  extra: Record<string, unknown>;
}

export interface FloorResult {
  requestBytes: number;
  responseBytes: number;
  ms: number;
  cpuMs: number;
  parts: { name: string; ms: number; cpuMs: number }[];
}

export interface SoakResult {
  seconds: number;
  warmupS: number;
  /** Median RSS in the window right after warm-up, MB. */
  rssAfterWarmupMb: number;
  /** Median RSS in the last window, MB. */
  rssEndMb: number;
  growthPct: number;
  peakMb: number;
  s1: { rps: number; p99: number; non2xx: number; errors: number };
  s2: { rps: number; p99: number; non2xx: number; errors: number };
  /** RSS every ~5 s: [seconds, MB]. */
  series: [number, number][];
  errorCandidates?: number;
  error?: string;
}

export type Verdict = 'PASS' | 'FAIL' | 'INFO' | 'NOT RUN';

export interface TargetCheck {
  id: string;
  description: string;
  /** Measured value (ratio or MB or %), null when not measured. */
  value: number | null;
  limit: number | null;
  op: '>=' | '<=' | 'info';
  unit: string;
  verdict: Verdict;
  detail: string;
}

export interface BenchResults {
  meta: {
    date: string;
    node: string;
    cpus: number;
    cpuModel: string;
    memGb: number;
    commit: string;
    dirty: boolean;
    args: string[];
    mode: string;
    durationS: number;
    warmupS: number;
    rounds: number;
    gatewayLogLevel: string;
    gatewayExtra: Record<string, unknown>;
    gatewayNodeArgs: string[];
    nginx: string | null;
    loadAvgStart: number[];
    loadAvgEnd: number[];
    wallS: number;
  };
  scenarios: ScenarioResult[];
  floor?: FloorResult & { error?: string };
  soak?: SoakResult;
  targets: TargetCheck[];
  harnessErrors: string[];
  profiles?: { scenario: string; file: string; summary: string }[];
}
