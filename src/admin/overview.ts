/**
 * What `GET /gateway/overview` shows (docs/console.md). Quantiles are interpolated as Prometheus's histogram_quantile
 * does, so the console agrees with a dashboard over the same series.
 */
import type { GatewayState } from '../batch/gateway-state.js';
import { histogramByLabel } from '../metrics.js';
import { quantileMs } from '../stats/histogram-quantile.js';

export interface Overview {
  version: string;
  started_at: string;
  uptime_s: number;
  listeners: { agent: string | null; admin: string | null };
  store: { kind: 'memory' | 'redis'; up: boolean; fallbacks: number };
  config: { path: string | null; last_reload: { at: string; trigger: string; ok: boolean; detail: string | null } | null };
  batches: { per_second: number; in_flight: number };
  error_candidates: Record<string, number>;
  overhead_ms: { samples: number; p50: number | null; p99: number | null };
  /** Null without a cache; bytes and entries are this process's (0 with Redis). */
  cache: { hits: number; misses: number; hit_rate: number | null; bytes: number; entries: number } | null;
}

async function cacheFigures(gw: GatewayState): Promise<Overview['cache']> {
  if (gw.cache === undefined) return null;
  const sum = async (c: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> => (await c.get()).values.reduce((n, v) => n + v.value, 0);
  const hits = await sum(gw.cache.metrics.hits);
  const misses = await sum(gw.cache.metrics.misses);
  const held = gw.cache.entries.held();
  return { hits, misses, hit_rate: hits + misses === 0 ? null : Math.round((hits / (hits + misses)) * 1e4) / 1e4, bytes: held.bytes, entries: held.entries };
}

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

export async function overview(gw: GatewayState, listeners: Overview['listeners'], now = Date.now()): Promise<Overview> {
  const codes: Record<string, number> = {};
  for (const v of (await gw.metrics.candidateErrors.get()).values) {
    const code = String(v.labels.code ?? 'unknown');
    if (v.value > 0) codes[code] = (codes[code] ?? 0) + v.value;
  }
  const { buckets, count: samples } = (await histogramByLabel(gw.metrics.overhead)).get('') ?? { buckets: {}, count: 0 };
  return {
    version: gw.version,
    started_at: new Date(gw.activity.startedAt).toISOString(),
    uptime_s: Math.max(0, Math.round((now - gw.activity.startedAt) / 1000)),
    listeners,
    store: { kind: gw.store.kind, up: gw.store.isUp(), fallbacks: gw.store.stats().fallbacks },
    config: { path: gw.configPath ?? null, last_reload: gw.activity.lastReload() },
    batches: {
      per_second: round(gw.activity.batchesPerSecond(), 2),
      in_flight: gw.current.inFlight,
    },
    error_candidates: Object.fromEntries(Object.entries(codes).sort((a, b) => b[1] - a[1])),
    overhead_ms: {
      samples,
      p50: quantileMs(buckets, 0.5),
      p99: quantileMs(buckets, 0.99),
    },
    cache: await cacheFigures(gw),
  };
}
