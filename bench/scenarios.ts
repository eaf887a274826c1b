/**
 * The bench's scenarios as data: what each one runs (its parameters) and the targets its figures are held to
 * (docs/gateway-behaviour.md#performance-targets), side by side. The runner (bench/lib/run.ts) reads this table;
 * changing a load, a size or a limit is an edit here only.
 */
import { ratio } from './lib/stats.js';
import type { FloorResult, ScenarioId, ScenarioResult, SoakResult, TargetSummary } from './lib/types.js';

/** What a threshold reads its figure from: every result of the run. */
export interface Measured {
  scenario: (id: ScenarioId) => ScenarioResult | undefined;
  floor: FloorResult | undefined;
  soak: SoakResult | undefined;
  nginx: boolean;
  soakS: number;
}

export interface Threshold {
  id: string;
  description: string;
  op: '>=' | '<=' | 'info';
  limit: number | null;
  unit: string;
  /** The figure (NaN: not measured), a line explaining it, and whether its scenario ran at all. */
  measure: (m: Measured) => { value: number; detail: string; ran: boolean };
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

export interface ScenarioSpec {
  id: ScenarioId;
  title: string;
  /** Part of `--quick` (CI proves the harness with these). */
  quick: boolean;
  params: ProxyParams | ShardParams | EnsembleParams | FloorParams;
  thresholds: Threshold[];
}

/** The soak: S1 and S2 traffic at once against one gateway, RSS sampled. */
export const SOAK = { s1Connections: 32, s2Connections: 4, s2Inputs: 32, s2HistoryKb: 64, defaultSeconds: 180, growthLimitPct: 10 };

const fmt = (n: number | undefined, digits = 0): string => n?.toFixed(digits) ?? '–';
const target = (s: ScenarioResult | undefined, id: string): TargetSummary['median'] => s?.targets.find((t) => t.id === id)?.median;

const S3 = { replicas: 4, inputs: 32, baseMs: 50, perInputMs: 5 };
const S3_SHARE = Math.ceil(S3.inputs / S3.replicas);
const S3_IDEAL = S3.baseMs + S3_SHARE * S3.perInputMs;
const S4 = { candidates: 8, baseMs: 20, perCandidateMs: 5 };

export const SCENARIOS: ScenarioSpec[] = [
  {
    id: 'S1',
    title: 'small: 1 input, ~1 KB, instant backend',
    quick: true,
    params: { kind: 'proxy', inputs: 1, historyKb: 0, connections: 32 },
    thresholds: [
      {
        id: 'S1-rps', description: 'S1 gateway req/s >= 1.5x @fastify/http-proxy passthrough', op: '>=', limit: 1.5, unit: 'x',
        measure: (m) => {
          const s = m.scenario('S1');
          const g = target(s, 'gateway');
          const p = target(s, 'passthrough');
          return { value: ratio(g?.rps, p?.rps), detail: `gateway ${fmt(g?.rps)} vs passthrough ${fmt(p?.rps)} req/s`, ran: s !== undefined };
        },
      },
      {
        id: 'S1-nginx', description: 'S1 gateway req/s vs nginx (reported)', op: 'info', limit: null, unit: 'x',
        measure: (m) => {
          const s = m.scenario('S1');
          const g = target(s, 'gateway');
          const n = target(s, 'nginx');
          const detail = m.nginx ? `gateway ${fmt(g?.rps)} vs nginx ${fmt(n?.rps)} req/s` : 'nginx not installed';
          return { value: ratio(g?.rps, n?.rps), detail, ran: s !== undefined && m.nginx };
        },
      },
      {
        id: 'S1-p99', description: 'S1 gateway p99 <= passthrough p99', op: '<=', limit: 1, unit: 'x',
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
        id: 'S2-cpu', description: 'S2 gateway CPU per batch <= 2.5x S5 JSON floor', op: '<=', limit: 2.5, unit: 'x',
        measure: (m) => {
          const s = m.scenario('S2');
          const g = target(s, 'gateway');
          return {
            value: ratio(g?.frontCpuMsPerBatch, m.floor?.cpuMs),
            detail: `gateway ${fmt(g?.frontCpuMsPerBatch, 1)} CPU ms/batch vs floor ${fmt(m.floor?.cpuMs, 1)} ms`,
            ran: s !== undefined && m.floor !== undefined,
          };
        },
      },
      {
        id: 'MEM-S2', description: 'peak gateway RSS during S2 <= 300 MB', op: '<=', limit: 300, unit: ' MB',
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
        id: 'S3-makespan', description: `S3 gateway batch p50 <= 1.15x ideal makespan (${S3_IDEAL} ms)`, op: '<=', limit: 1.15, unit: 'x',
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
        id: 'S4-ensemble', description: "S4 ensemble p50 <= 1.2x one member's p50 for its share", op: '<=', limit: 1.2, unit: 'x',
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
];

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
