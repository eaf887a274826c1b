/**
 * The bench's scenarios as data: what each one runs (its parameters) and the targets its figures are held to
 * (docs/performance.md#targets), side by side. The runner (bench/lib/run.ts) reads this table;
 * changing a load, a size or a limit is an edit here only.
 */
import { ratio } from './lib/stats.js';
import type { AllocFigures, Comparison, FloorResult, MemoryFigures, ScenarioId, ScenarioResult, SoakResult, TargetSummary } from './lib/types.js';

/** What a threshold reads its figure from: every result of the run. */
export interface Measured {
  scenario: (id: ScenarioId) => ScenarioResult | undefined;
  floor: FloorResult | undefined;
  soak: SoakResult | undefined;
  nginx: boolean;
  soakS: number;
  /** With --compare: this run against the earlier one. */
  comparison?: Comparison;
}

export interface Threshold {
  id: string;
  description: string;
  op: '>=' | '<=' | 'info';
  /** null: `measure` gives the limit (it depends on what was measured), or none (info). */
  limit: number | null;
  unit: string;
  /**
   * A speed figure of the gateway (higher is better for '>=', lower for '<='; 'info' ones are higher-is-better
   * ratios): `--compare` counts its scenario as slower when it moved the wrong way by more than the tolerance.
   */
  speed?: boolean;
  /**
   * The figure (NaN: not measured), a line explaining it, and whether its scenario ran at all. `limit` overrides
   * the table's; `unmet` says why the target is missed whatever the figure (the gateway did not answer).
   */
  measure: (m: Measured) => { value: number; detail: string; ran: boolean; limit?: number; unmet?: string };
}

/** One backend behind each target: direct, passthrough, naive proxy, nginx, the gateway. */
export interface ProxyParams {
  kind: 'proxy';
  inputs: number;
  /** KB of history memory per input; 0: the small ~1 KB request. */
  historyKb: number;
  connections: number;
}
/** Inputs sharded over slow replicas behind the gateway vs one replica direct. */
export interface ShardParams {
  kind: 'shard';
  replicas: number;
  inputs: number;
  baseMs: number;
  perInputMs: number;
}
/** Candidates from a 1:1 ensemble of two backends vs all of them (and one member's share) from one. */
export interface EnsembleParams {
  kind: 'ensemble';
  candidates: number;
  baseMs: number;
  perCandidateMs: number;
}
/** The in-process JSON floor: parse + validate + stringify of S2's traffic with nothing else. */
export interface FloorParams {
  kind: 'floor';
}
/**
 * Peak RSS of the gateway (and reference proxies), each in a fresh process, while `inFlight` batches are held in
 * it at once: bench/waves.ts sends them together and the backend's gate answers when all have arrived.
 */
export interface MemoryParams {
  kind: 'memory';
  inputs: number;
  /** KB of history memory per input. */
  historyKb: number;
  numOutputs: number;
  inFlight: number;
  /** Waves of `inFlight` batches, one after the other; the peak is over all of them. */
  waves: number;
  /** Proxies measured the same way beside the gateway, for reference (no target). */
  references: ('passthrough' | 'naive')[];
  /** Parse and check the first answer in full; false for answers longer than a string can hold. */
  checkFirst: boolean;
  /** Top-level keys of this scenario's gateway config (raised limits); `server` keys join the listener's. */
  gatewayConfig?: Record<string, unknown>;
  /** Keys added to the gateway's backend entry (e.g. max_response_mb). */
  backendConfig?: Record<string, unknown>;
  /** What `--quick` runs instead, when the scenario is part of it: small enough to take seconds. */
  quick?: Partial<Pick<MemoryParams, 'inFlight' | 'waves' | 'references'>>;
}

/**
 * JS heap bytes allocated and promoted per S1 request (bench/lib/alloc.ts), the gateway and the naive proxy each in a
 * fresh process under `--trace-gc-nvp`: a warm-up, then the measured phase.
 */
export interface AllocParams {
  kind: 'alloc';
  connections: number;
  warmupS: number;
  durationS: number;
  quickWarmupS: number;
  quickDurationS: number;
}

export interface ScenarioSpec {
  id: ScenarioId;
  title: string;
  /** Part of `--quick` (CI proves the harness with these). */
  quick: boolean;
  params: ProxyParams | ShardParams | EnsembleParams | FloorParams | MemoryParams | AllocParams;
  thresholds: Threshold[];
}

/**
 * MEMROWS (bench/memory-rows.ts, docs/memory-budget.md): the element-count and budget cases against one gateway
 * with `server.memory_budget_mb: 400`; targets: peak RSS within the budget + 250 MB, RSS back under the budget
 * 15 s after, every case answered without a 5xx but the budget's 503. Not part of --quick (minutes).
 */
export const MEMORY_ROWS = { id: 'MEMROWS', budgetMb: 400, slackMb: 250, afterS: 15 };

/** The soak: S1 and S2 traffic at once against one gateway, RSS sampled. */
export const SOAK = { s1Connections: 32, s2Connections: 4, s2Inputs: 32, s2HistoryKb: 64, defaultSeconds: 180, growthLimitPct: 10 };

const fmt = (n: number | undefined, digits = 0): string => n?.toFixed(digits) ?? '–';
const target = (s: ScenarioResult | undefined, id: string): TargetSummary['median'] => s?.targets.find((t) => t.id === id)?.median;
const memory = (s: ScenarioResult | undefined, id: string): MemoryFigures | undefined => s?.targets.find((t) => t.id === id)?.memory;

/** Why a memory figure of the gateway does not count: it did not answer every batch, or it died. */
function unanswered(g: MemoryFigures | undefined): string | undefined {
  if (g === undefined) return undefined;
  if (g.exited !== undefined) return `the gateway ${g.exited}`;
  if (g.answered < g.answers) return `${g.answers - g.answered} of ${g.answers} batches not answered in full (${JSON.stringify(g.statuses)})`;
  return undefined;
}

/** The detail line of a memory threshold: the gateway's peak and the references' beside it. */
function memoryDetail(s: ScenarioResult | undefined): string {
  const g = memory(s, 'gateway');
  if (g === undefined) return 'not measured';
  const refs = (s?.targets ?? [])
    .filter((t) => t.role !== 'gateway' && t.memory !== undefined)
    .map((t) => `${t.id} ${fmt(t.memory?.hwmMb)} MB`);
  return (
    `VmHWM ${fmt(g.hwmMb)} MB with ${g.inFlight} x ${fmt(g.bytesInFlightMb / g.inFlight, 1)} MB in flight ` +
    `(${fmt(g.hwmMb / g.bytesInFlightMb, 1)}x the bytes in flight), answers ${fmt(g.answerMb, 1)} MB` +
    (refs.length > 0 ? `; ${refs.join(', ')}` : '')
  );
}

/**
 * ALLOC's limits: the gateway allocates per S1 request at most this many times what the naive proxy does (it
 * validates, routes, tags and keeps replay; 52 KB against 26 KB measured), and what scavenges promote is at most
 * this share of what it allocates (a batch's objects die young; the replay entry is meant to live).
 */
const ALLOC = { allocatedRatio: 3, promotedShare: 0.1 };

const S3 = { replicas: 4, inputs: 32, baseMs: 50, perInputMs: 5 };
const S3_SHARE = Math.ceil(S3.inputs / S3.replicas);
const S3_IDEAL = S3.baseMs + S3_SHARE * S3.perInputMs;
const S4 = { candidates: 8, baseMs: 20, perCandidateMs: 5 };
/** S2's batch (32 x 64 KB, about 2 MB) held 64 at once. */
const S6 = { inFlight: 64, slackMb: 150 };
/** One batch just under the default body_limit_mb (64 MiB): 32 inputs of about 2 MB of memory. */
const S7 = { inputs: 32, historyKb: 2030, limitMb: 400 };
/** The largest amplification the default limits allow per input, with the answer limits raised to fit it. */
const S8 = { memoryKb: 600, numOutputs: 1024, limitMb: 300 };

export const SCENARIOS: ScenarioSpec[] = [
  {
    id: 'S1',
    title: 'small: 1 input, ~1 KB, instant backend',
    quick: true,
    params: { kind: 'proxy', inputs: 1, historyKb: 0, connections: 32 },
    thresholds: [
      {
        id: 'S1-naive', description: 'S1 gateway req/s >= 1.0x the naive JSON proxy (same rounds)', op: '>=', limit: 1, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S1');
          const g = target(s, 'gateway');
          const n = target(s, 'naive');
          return { value: ratio(g?.rps, n?.rps), detail: `gateway ${fmt(g?.rps)} vs naive proxy ${fmt(n?.rps)} req/s`, ran: s !== undefined };
        },
      },
      {
        id: 'S1-rps', description: 'S1 gateway req/s >= 1.5x @fastify/http-proxy passthrough (same rounds)', op: '>=', limit: 1.5, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S1');
          const g = target(s, 'gateway');
          const p = target(s, 'passthrough');
          return { value: ratio(g?.rps, p?.rps), detail: `gateway ${fmt(g?.rps)} vs passthrough ${fmt(p?.rps)} req/s`, ran: s !== undefined };
        },
      },
      {
        id: 'S1-nginx', description: 'S1 gateway req/s vs nginx (reported)', op: 'info', limit: null, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S1');
          const g = target(s, 'gateway');
          const n = target(s, 'nginx');
          const detail = m.nginx ? `gateway ${fmt(g?.rps)} vs nginx ${fmt(n?.rps)} req/s` : 'nginx not installed';
          return { value: ratio(g?.rps, n?.rps), detail, ran: s !== undefined && m.nginx };
        },
      },
      {
        id: 'S1-p99', description: 'S1 gateway p99 <= passthrough p99', op: '<=', limit: 1, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S1');
          const g = target(s, 'gateway');
          const p = target(s, 'passthrough');
          return { value: ratio(g?.p99, p?.p99), detail: `gateway ${fmt(g?.p99, 2)} ms vs passthrough ${fmt(p?.p99, 2)} ms`, ran: s !== undefined };
        },
      },
    ],
  },
  {
    id: 'S2',
    title: 'BENCH-like: 32 inputs x 64 KB history memory; memory +1 step and 8 KB internal_steps back',
    quick: true,
    params: { kind: 'proxy', inputs: 32, historyKb: 64, connections: 4 },
    thresholds: [
      {
        id: 'S2-cpu', description: 'S2 gateway CPU per batch <= 1.0x the S5 JSON floor', op: '<=', limit: 1, unit: 'x', speed: true,
        measure: (m) => s2Cpu(m),
      },
      {
        id: 'S2-cpu-must', description: 'S2 gateway CPU per batch <= 1.5x the S5 JSON floor (must reach)', op: '<=', limit: 1.5, unit: 'x',
        measure: (m) => s2Cpu(m),
      },
      {
        id: 'S2-cpu-passthrough', description: "S2 gateway CPU per batch <= 1.6x the passthrough's (same rounds)", op: '<=', limit: 1.6, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S2');
          const g = target(s, 'gateway');
          const p = target(s, 'passthrough');
          return {
            value: ratio(g?.frontCpuMsPerBatch, p?.frontCpuMsPerBatch),
            detail: `gateway ${fmt(g?.frontCpuMsPerBatch, 1)} vs passthrough ${fmt(p?.frontCpuMsPerBatch, 1)} CPU ms/batch`,
            ran: s !== undefined,
          };
        },
      },
      {
        id: 'MEM-S2', description: 'peak gateway RSS during S2 (4 batches in flight) <= 200 MB', op: '<=', limit: 200, unit: ' MB',
        measure: (m) => {
          const s = m.scenario('S2');
          return { value: target(s, 'gateway')?.frontHwmMb ?? Number.NaN, detail: 'VmHWM of a gateway started for S2', ran: s !== undefined };
        },
      },
    ],
  },
  {
    id: 'S3',
    title: `sharding: ${S3.inputs} inputs, replicas take ${S3.baseMs} ms + ${S3.perInputMs} ms/input`,
    quick: false,
    params: { kind: 'shard', ...S3 },
    thresholds: [
      {
        id: 'S3-makespan', description: `S3 gateway batch p50 <= 1.15x ideal makespan (${S3_IDEAL} ms)`, op: '<=', limit: 1.15, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S3');
          const g = target(s, 'gateway');
          return { value: ratio(g?.p50, S3_IDEAL), detail: `gateway p50 ${fmt(g?.p50, 1)} ms, p99 ${fmt(g?.p99, 1)} ms`, ran: s !== undefined };
        },
      },
      {
        // 2.3x is stricter than the makespan target above: it needs a p50 of about 91 ms.
        id: 'S3-speedup', description: 'S3 speed-up vs 1 replica direct >= 2.3x', op: '>=', limit: 2.3, unit: 'x',
        measure: (m) => {
          const s = m.scenario('S3');
          const g = target(s, 'gateway');
          const d = target(s, 'direct');
          const atMakespan = (S3.baseMs + S3.inputs * S3.perInputMs) / (1.15 * S3_IDEAL);
          return {
            value: ratio(d?.p50, g?.p50),
            detail: `1 replica ${fmt(d?.p50, 1)} ms vs gateway ${fmt(g?.p50, 1)} ms (1.15x of ideal = ${atMakespan.toFixed(2)}x)`,
            ran: s !== undefined,
          };
        },
      },
    ],
  },
  {
    id: 'S4',
    title: `ensemble: 1 input x ${S4.candidates} candidates from two backends (${S4.baseMs} ms + ${S4.perCandidateMs} ms/candidate)`,
    quick: false,
    params: { kind: 'ensemble', ...S4 },
    thresholds: [
      {
        id: 'S4-ensemble', description: "S4 ensemble p50 <= 1.2x one member's p50 for its share", op: '<=', limit: 1.2, unit: 'x', speed: true,
        measure: (m) => {
          const s = m.scenario('S4');
          const g = target(s, 'gateway');
          const sh = target(s, 'share');
          return { value: ratio(g?.p50, sh?.p50), detail: `gateway ${fmt(g?.p50, 1)} ms vs member share ${fmt(sh?.p50, 1)} ms`, ran: s !== undefined };
        },
      },
    ],
  },
  {
    id: 'S5',
    title: 'JSON floor: S2 traffic through parse, validate and stringify in one process',
    quick: true,
    params: { kind: 'floor' },
    thresholds: [],
  },
  {
    id: 'S6',
    title: `memory: ${S6.inFlight} S2 batches (32 x 64 KB) in flight at once, gated backend`,
    // --quick runs 8 in flight, one wave, the gateway alone: it proves the path (gate, driver, VmHWM) in seconds.
    quick: true,
    params: {
      kind: 'memory', inputs: 32, historyKb: 64, numOutputs: 1, inFlight: S6.inFlight, waves: 2, references: ['passthrough', 'naive'], checkFirst: true,
      quick: { inFlight: 8, waves: 1, references: [] },
    },
    thresholds: [
      {
        id: 'MEM-S6', description: `peak gateway RSS with ${S6.inFlight} batches of ~2 MB in flight <= 2x the bytes in flight + ${S6.slackMb} MB`, op: '<=', limit: null, unit: ' MB',
        measure: (m) => {
          const s = m.scenario('S6');
          const g = memory(s, 'gateway');
          const limit = g === undefined ? undefined : 2 * g.bytesInFlightMb + S6.slackMb;
          return { value: g?.hwmMb ?? Number.NaN, limit, detail: memoryDetail(s), ran: s !== undefined, unmet: unanswered(g) };
        },
      },
    ],
  },
  {
    id: 'S7',
    title: `memory: one batch of ~64 MB (${S7.inputs} x ${S7.historyKb} KB memory) end to end`,
    quick: false,
    params: { kind: 'memory', inputs: S7.inputs, historyKb: S7.historyKb, numOutputs: 1, inFlight: 1, waves: 2, references: ['passthrough', 'naive'], checkFirst: true },
    thresholds: [
      {
        id: 'MEM-S7', description: `peak gateway RSS for one ~64 MB batch <= ${S7.limitMb} MB`, op: '<=', limit: S7.limitMb, unit: ' MB',
        measure: (m) => {
          const s = m.scenario('S7');
          const g = memory(s, 'gateway');
          return { value: g?.hwmMb ?? Number.NaN, detail: memoryDetail(s), ran: s !== undefined, unmet: unanswered(g) };
        },
      },
    ],
  },
  {
    id: 'S8',
    title: `memory: 1 input x ${S8.memoryKb} KB memory x num_outputs ${S8.numOutputs} (answer over 600 MB), answer limits raised`,
    quick: false,
    params: {
      kind: 'memory', inputs: 1, historyKb: S8.memoryKb, numOutputs: S8.numOutputs, inFlight: 1, waves: 1, references: ['passthrough'], checkFirst: false,
      // server.max_answer_mb and the backend's max_response_mb (defaults 128 and 256) raised so the batch is within the limits.
      gatewayConfig: { server: { max_answer_mb: 1024 } },
      backendConfig: { max_response_mb: 1024 },
    },
    thresholds: [
      {
        id: 'MEM-S8', description: `1 input x ${S8.memoryKb} KB x num_outputs ${S8.numOutputs}: answered, peak gateway RSS <= ${S8.limitMb} MB`, op: '<=', limit: S8.limitMb, unit: ' MB',
        measure: (m) => {
          const s = m.scenario('S8');
          const g = memory(s, 'gateway');
          return { value: g?.hwmMb ?? Number.NaN, detail: memoryDetail(s), ran: s !== undefined, unmet: unanswered(g) };
        },
      },
    ],
  },
  {
    id: 'ALLOC',
    title: 'allocation: JS heap KB allocated and promoted per S1 request (--trace-gc-nvp), gateway vs naive proxy',
    quick: true,
    params: { kind: 'alloc', connections: 32, warmupS: 3, durationS: 15, quickWarmupS: 1, quickDurationS: 2 },
    thresholds: [
      {
        id: 'ALLOC-allocated', description: `gateway KB allocated per S1 request <= ${ALLOC.allocatedRatio}x the naive proxy's (same run)`, op: '<=', limit: ALLOC.allocatedRatio, unit: 'x',
        measure: (m) => {
          const { g, n, ran, detail } = allocOf(m);
          return { value: ratio(g?.allocatedKbPerRequest, n?.allocatedKbPerRequest), detail, ran };
        },
      },
      {
        id: 'ALLOC-promoted', description: `gateway KB promoted per S1 request <= ${ALLOC.promotedShare * 100}% of what it allocates (batches die young)`, op: '<=', limit: ALLOC.promotedShare, unit: 'x',
        measure: (m) => {
          const { g, ran, detail } = allocOf(m);
          const scavenges = g === undefined ? '' : ` (${g.scavenges} scavenges, ${g.markCompacts} mark-compacts over ${g.requests} requests)`;
          return { value: ratio(g?.promotedKbPerRequest, g?.allocatedKbPerRequest), detail: detail + scavenges, ran };
        },
      },
    ],
  },
];

/** The gateway's and the naive proxy's allocation figures in ALLOC, and whether both were measured. */
function allocOf(m: Measured): { g: AllocFigures | undefined; n: AllocFigures | undefined; ran: boolean; detail: string } {
  const s = m.scenario('ALLOC');
  const g = s?.targets.find((t) => t.id === 'gateway')?.alloc;
  const n = s?.targets.find((t) => t.id === 'naive')?.alloc;
  const one = (who: string, a: AllocFigures | undefined): string =>
    a === undefined ? `${who} not measured` : `${who} ${fmt(a.allocatedKbPerRequest, 1)} KB allocated, ${fmt(a.promotedKbPerRequest, 2)} KB promoted per request`;
  return { g, n, ran: s !== undefined, detail: `${one('gateway', g)}; ${one('naive proxy', n)}` };
}

function s2Cpu(m: Measured): { value: number; detail: string; ran: boolean } {
  const s = m.scenario('S2');
  const g = target(s, 'gateway');
  return {
    value: ratio(g?.frontCpuMsPerBatch, m.floor?.cpuMs),
    detail: `gateway ${fmt(g?.frontCpuMsPerBatch, 1)} CPU ms/batch vs floor ${fmt(m.floor?.cpuMs, 1)} ms`,
    ran: s !== undefined && m.floor !== undefined,
  };
}

/** Soak thresholds: they read the soak's result only. */
export const SOAK_THRESHOLDS: Threshold[] = [
  {
    id: 'MEM-soak', description: `gateway RSS growth after warm-up over an S1+S2 soak <= ${SOAK.growthLimitPct}%`, op: '<=', limit: SOAK.growthLimitPct, unit: '%',
    measure: (m) => ({
      value: m.soak?.growthPct ?? Number.NaN,
      detail:
        m.soak === undefined
          ? 'run with --soak or --full'
          : (m.soak.error ?? `${m.soakS} s: ${m.soak.rssAfterWarmupMb.toFixed(0)} → ${m.soak.rssEndMb.toFixed(0)} MB`),
      ran: m.soak !== undefined,
    }),
  },
];

/** Read after the comparison with an earlier run (--compare), once every other threshold is evaluated. */
export const COMPARE_THRESHOLDS: Threshold[] = [
  {
    id: 'NO-SLOWER', description: 'no scenario slower than the compared run (its speed targets, beyond the tolerance)', op: '<=', limit: 0, unit: ' scenarios',
    measure: (m) => {
      const c = m.comparison;
      if (c === undefined) return { value: Number.NaN, detail: 'run with --compare FILE', ran: false };
      const worse = c.figures.filter((f) => f.speed && f.verdict === 'worse').map((f) => `${f.what} ${f.changePct === null ? '' : (f.changePct > 0 ? '+' : '') + f.changePct.toFixed(0) + '%'}`);
      const against = `vs ${c.before.commit} (${c.before.date.slice(0, 16)}), ±${c.tolerancePct}%`;
      return { value: c.slower.length, detail: worse.length > 0 ? `${against}: ${worse.join(', ')}` : `${against}: none`, ran: true };
    },
  },
];
