/**
 * The gateway's pulse (docs/console.md#the-pulse). Quantiles come from the merged buckets, never from an average
 * of quantiles.
 */
import { randomUUID } from 'node:crypto';
import { histogramByLabel, type GatewayMetrics } from '../metrics.js';
import { parseJsonOrUndefined } from '../protocol/schemas.js';
import type { StorePorts } from '../state/types.js';
import { quantileMs, type LeCounts as Buckets } from '../stats/histogram-quantile.js';

export interface PulseRaw {
  slot: number;
  /** The interval, or less for the first one after start. */
  seconds?: number;
  batches: number;
  errors: number;
  overhead: Buckets;
  backends: Record<string, { requests: number; failures: number; latency: Buckets }>;
}

interface PulsePoint {
  at: string;
  batches_per_s: number;
  error_candidates_per_s: number;
  overhead_ms: { p50: number | null; p95: number | null };
  backends: Record<string, { requests_per_s: number; failures_per_s: number; latency_ms: { p50: number | null; p95: number | null } }>;
}

interface PulseView {
  interval_s: number;
  capacity: number;
  shared: boolean;
  points: PulsePoint[];
}

export interface PulseSink {
  push(raw: PulseRaw, points: number, intervalMs: number): Promise<void>;
  /** Undefined when the store cannot answer. */
  read(): Promise<PulseRaw[] | undefined>;
}

interface Reading {
  at: number;
  batches: number;
  errors: number;
  overhead: Buckets;
  backends: Map<string, { requests: number; failures: number; latency: Buckets }>;
}

const minus = (a: Buckets, b: Buckets | undefined): Buckets => Object.fromEntries(Object.entries(a).map(([le, n]) => [le, n - (b?.[le] ?? 0)]));
const plus = (a: Buckets, b: Buckets): Buckets => {
  const out = { ...a };
  for (const [le, n] of Object.entries(b)) out[le] = (out[le] ?? 0) + n;
  return out;
};
const perSecond = (n: number, intervalS: number): number => Math.round((n / intervalS) * 1000) / 1000;

async function read(metrics: GatewayMetrics, batches: number): Promise<Omit<Reading, 'at'>> {
  const errors = (await metrics.candidateErrors.get()).values.reduce((n, v) => n + v.value, 0);
  const overhead = (await histogramByLabel(metrics.overhead)).get('')?.buckets ?? {};
  const backends: Reading['backends'] = new Map();
  const of = (name: string) => {
    let b = backends.get(name);
    if (b === undefined) backends.set(name, (b = { requests: 0, failures: 0, latency: {} }));
    return b;
  };
  for (const [name, { buckets }] of await histogramByLabel(metrics.backendDuration, 'backend')) of(name).latency = buckets;
  for (const v of (await metrics.backendRequests.get()).values) {
    const b = of(String(v.labels.backend ?? ''));
    b.requests += v.value;
    if (v.labels.outcome !== 'ok') b.failures += v.value;
  }
  return { batches, errors, overhead, backends };
}

interface PulseHost {
  metrics: GatewayMetrics;
  batches(): number;
  settings(): { intervalS: number; points: number };
  log: { warn(obj: object, msg: string): void };
  sink?: PulseSink;
}

export class Pulse {
  private readonly ring: PulseRaw[] = [];
  private last: Reading | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly host: PulseHost,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.stop();
    const intervalMs = this.host.settings().intervalS * 1000;
    // The same instant on every replica, so their slots line up.
    this.timer = setTimeout(() => void this.sample().finally(() => this.start()), intervalMs - (this.now() % intervalMs));
    this.timer.unref(); // the pulse never keeps the process alive
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The first only sets the baseline. Never throws: a failed sample is a gap, logged. */
  async sample(): Promise<PulseRaw | undefined> {
    const { intervalS, points } = this.host.settings();
    try {
      const now: Reading = Object.assign(await read(this.host.metrics, this.host.batches()), { at: this.now() });
      const prev = this.last;
      this.last = now;
      if (prev === undefined) return undefined;
      const backends: PulseRaw['backends'] = {};
      for (const [name, b] of now.backends) {
        const p = prev.backends.get(name);
        const requests = b.requests - (p?.requests ?? 0);
        if (requests > 0) backends[name] = { requests, failures: b.failures - (p?.failures ?? 0), latency: minus(b.latency, p?.latency) };
      }
      const raw: PulseRaw = {
        slot: Math.round(now.at / (intervalS * 1000)),
        seconds: Math.min(intervalS, Math.max(0.001, (now.at - prev.at) / 1000)),
        batches: now.batches - prev.batches,
        errors: now.errors - prev.errors,
        overhead: minus(now.overhead, prev.overhead),
        backends,
      };
      this.ring.push(raw);
      if (this.ring.length > points) this.ring.splice(0, this.ring.length - points);
      await this.host.sink?.push(raw, points, intervalS * 1000);
      return raw;
    } catch (err) {
      this.host.log.warn({ err }, 'pulse: sample failed');
      return undefined;
    }
  }

  async view(): Promise<PulseView> {
    const { intervalS, points } = this.host.settings();
    const shared = this.host.sink === undefined ? undefined : await this.host.sink.read().catch(() => undefined);
    // Counts become rates over the seconds each replica's sample covers, then add up across replicas.
    const merged = new Map<number, PulseRaw>();
    for (const raw of shared ?? this.ring) {
      const k = intervalS / (raw.seconds ?? intervalS);
      const r: PulseRaw = Object.assign({}, raw, {
        batches: raw.batches * k,
        errors: raw.errors * k,
        backends: Object.fromEntries(Object.entries(raw.backends).map(([n, b]) => [n, Object.assign({}, b, { requests: b.requests * k, failures: b.failures * k })])),
      });
      const m = merged.get(r.slot);
      if (m === undefined) {
        merged.set(r.slot, r);
        continue;
      }
      m.batches += r.batches;
      m.errors += r.errors;
      m.overhead = plus(m.overhead, r.overhead);
      for (const [name, b] of Object.entries(r.backends)) {
        const mb = m.backends[name];
        m.backends[name] = mb === undefined ? b : { requests: mb.requests + b.requests, failures: mb.failures + b.failures, latency: plus(mb.latency, b.latency) };
      }
    }
    const slots = [...merged.values()].sort((a, b) => a.slot - b.slot).slice(-points);
    return {
      interval_s: intervalS,
      capacity: points,
      shared: shared !== undefined,
      points: slots.map((r) => ({
        at: new Date(r.slot * intervalS * 1000).toISOString(),
        batches_per_s: perSecond(r.batches, intervalS),
        error_candidates_per_s: perSecond(r.errors, intervalS),
        overhead_ms: { p50: quantileMs(r.overhead, 0.5), p95: quantileMs(r.overhead, 0.95) },
        backends: Object.fromEntries(
          Object.entries(r.backends)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([name, b]) => [
              name,
              {
                requests_per_s: perSecond(b.requests, intervalS),
                failures_per_s: perSecond(b.failures, intervalS),
                latency_ms: { p50: quantileMs(b.latency, 0.5), p95: quantileMs(b.latency, 0.95) },
              },
            ]),
        ),
      })),
    };
  }
}

const REPLICAS_KEY = 'pulse:replicas';
const MAX_REPLICAS = 64;

function isRaw(v: unknown): v is PulseRaw {
  const r = v as Partial<PulseRaw> | null; // checked field by field next
  return typeof r === 'object' && r !== null && typeof r.slot === 'number' && typeof r.batches === 'number' && typeof r.errors === 'number'
    && typeof r.overhead === 'object' && typeof r.backends === 'object';
}

/**
 * The pulse's samples shared through the store (docs/console.md#the-pulse): each replica appends to its own capped
 * list `pulse:<replica>` and names itself in `pulse:replicas`; both expire after twice the pulse's span unwritten,
 * so a replica gone for good drops out.
 */
export function sharedPulse(store: Pick<StorePorts, 'lists' | 'claims'>, replica: string = randomUUID()): PulseSink {
  return {
    async push(raw, points, intervalMs) {
      const ttlMs = 2 * points * intervalMs;
      await store.claims.addMember(REPLICAS_KEY, replica, ttlMs, MAX_REPLICAS);
      await store.lists.push(`pulse:${replica}`, JSON.stringify(raw), points, ttlMs);
    },
    async read() {
      const replicas = (await store.claims.members(REPLICAS_KEY)).slice(0, MAX_REPLICAS);
      const lists = await Promise.all(replicas.map((r) => store.lists.read(`pulse:${r}`)));
      // A line that is not a sample of ours is skipped.
      return lists.flat().map(parseJsonOrUndefined).filter(isRaw);
    },
  };
}
