/** Per-backend latency quantiles and outcomes `GET /gateway/backends` adds for the console (docs/console.md#backends). */
import type { GatewayMetrics } from '../metrics.js';
import { histogramQuantile } from '../stats/histogram-quantile.js';

interface BackendStats {
  latency_ms: { samples: number; p50: number | null; p95: number | null };
  outcomes: Record<string, number>;
}

const toMs = (s: number | null): number | null => (s === null ? null : Math.round(s * 1e6) / 1e3);

export async function backendStats(metrics: GatewayMetrics): Promise<Map<string, BackendStats>> {
  const out = new Map<string, BackendStats>();
  const of = (name: string): BackendStats => {
    let s = out.get(name);
    if (s === undefined) out.set(name, (s = { latency_ms: { samples: 0, p50: null, p95: null }, outcomes: {} }));
    return s;
  };
  const buckets = new Map<string, { le: number; count: number }[]>();
  for (const v of (await metrics.backendDuration.get()).values) {
    const backend = String(v.labels.backend ?? '');
    // Histogram values carry `le` beside the declared labels; prom-client's type names only the declared ones.
    const le: unknown = Reflect.get(v.labels, 'le');
    if (v.metricName?.endsWith('_bucket') === true) {
      let b = buckets.get(backend);
      if (b === undefined) buckets.set(backend, (b = []));
      b.push({ le: le === '+Inf' ? Infinity : Number(le), count: v.value });
    } else if (v.metricName?.endsWith('_count') === true) of(backend).latency_ms.samples = v.value;
  }
  for (const [backend, b] of buckets) {
    const s = of(backend);
    s.latency_ms.p50 = toMs(histogramQuantile(b, 0.5));
    s.latency_ms.p95 = toMs(histogramQuantile(b, 0.95));
  }
  for (const v of (await metrics.backendRequests.get()).values) {
    if (v.value > 0) of(String(v.labels.backend ?? '')).outcomes[String(v.labels.outcome ?? 'unknown')] = v.value;
  }
  return out;
}
