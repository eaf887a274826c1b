/** Shapes of the bench's results (latest.json in the results directory). */

export type ScenarioId = 'S1' | 'S2' | 'S3' | 'S4' | 'S5' | 'S6' | 'S7' | 'S8' | 'ALLOC';
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

/** A memory scenario's figures for one front process (bench/lib/memory.ts): a fresh process per target. */
export interface MemoryFigures {
  /** Peak RSS (VmHWM, the kernel's exact peak) of the front process from its start to the last answer, MB. */
  hwmMb: number;
  /** Largest VmRSS sampled every 100 ms during the waves, MB. */
  rssMaxMb: number;
  /** Batches sent at once, and the request bytes they hold together, MB. */
  inFlight: number;
  bytesInFlightMb: number;
  waves: number;
  /** Answers, and those with status 200 and every candidate completed. */
  answers: number;
  answered: number;
  statuses: Record<string, number>;
  /** Size of the largest answer, MB. */
  answerMb: number;
  /** CPU ms of the front process per batch. */
  cpuMsPerBatch: number;
  /** Median wall seconds of a wave. */
  waveS: number;
  /** Times the backend's gate opened by timeout: fewer batches than `inFlight` were held at once. */
  gateTimedOut: number;
  /** Error candidates the gateway counted (its metrics), and per code. */
  errorCandidates?: number;
  errorCodes?: Record<string, number>;
  problems: string[];
  /** Set when the front process had exited before the end (the peak is then the last sampled VmHWM). */
  exited?: string;
}

/** The allocation scenario's figures for one front process (bench/lib/alloc.ts), over its measured phase. */
export interface AllocFigures {
  requests: number;
  /** Answers other than 2xx, and connection errors. */
  non2xx: number;
  /** JS heap bytes allocated per request (V8's `allocated=`, summed), KB. */
  allocatedKbPerRequest: number;
  /** Bytes scavenges promoted to the old generation per request (`promoted=`), KB. */
  promotedKbPerRequest: number;
  scavenges: number;
  markCompacts: number;
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
  /** Memory scenarios (S6-S8): these figures instead of rounds. */
  memory?: MemoryFigures;
  /** The allocation scenario (ALLOC): these figures instead of rounds. */
  alloc?: AllocFigures;
  /** p50 / p99 added over the scenario's direct target, ms. */
  addedP50Ms?: number;
  addedP99Ms?: number;
}

export interface ScenarioResult {
  id: ScenarioId;
  title: string;
  /** 'memory': S6-S8, figures per target in `memory`; 'alloc': ALLOC, in `alloc` (absent: rounds of load, figures in `median`). */
  kind?: 'memory' | 'alloc';
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
  /** With --compare FILE: this run's figures against that earlier run's. */
  comparison?: Comparison;
}

/** One figure of one target (or one threshold's value) in an earlier run and in this one. */
export interface ComparedFigure {
  scenario: string;
  /** A target label, or `target <threshold id>` for a threshold's value. */
  what: string;
  figure: string;
  before: number | null;
  after: number | null;
  /** after / before - 1, in percent; null when either is missing. */
  changePct: number | null;
  better: 'higher' | 'lower';
  /** Moved the wrong way (or the right way) by more than the tolerance. */
  verdict: 'worse' | 'better' | 'same' | 'new' | 'gone';
  /** A speed figure of the gateway: counts for "no scenario gets slower". */
  speed: boolean;
}

export interface Comparison {
  file: string;
  before: { date: string; commit: string; dirty: boolean; mode: string; loadAvgStart: number[] };
  tolerancePct: number;
  figures: ComparedFigure[];
  /** Scenarios with a gateway speed figure worse by more than the tolerance. */
  slower: string[];
}
