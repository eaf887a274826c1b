/**
 * Every backend's replicas, built from config at start. Answers the planner's question "can this backend serve?"
 * and the dispatcher's "which replicas take these inputs?", and keeps the failure/ejection bookkeeping
 * (docs/gateway-behaviour.md, "Probing and ejection": N consecutive failures eject with a doubling backoff,
 * never more than a share).
 */
import type { GatewayConfig } from '../config/schema.js';
import type { GatewayMetrics } from '../metrics.js';
import type { RoutingSnapshot } from '../routing/plan.js';
import { Replica } from './replica.js';

export interface BackendUpstream {
  name: string;
  replicas: Replica[];
  timeoutMs: number;
  ejectAfter: number;
  /** Smoothed latency of successful sub-requests: what a fallback to this backend is expected to take. */
  ewmaMs: number;
}

export class Upstreams implements RoutingSnapshot {
  readonly backends = new Map<string, BackendUpstream>();
  /** Told of every ejection decided here, so other gateway replicas can learn of it (shared-ejections.ts). */
  onEject: ((r: Replica) => void) | undefined;

  constructor(
    private readonly config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
  ) {
    for (const [name, b] of Object.entries(config.backends)) {
      const replicas = b.urls.map(
        (url, index) =>
          new Replica({ backend: name, index, url, connectTimeoutMs: b.connect_timeout_s * 1000, headers: b.headers }),
      );
      this.backends.set(name, { name, replicas, timeoutMs: b.timeout_s * 1000, ejectAfter: b.eject_after_failures, ewmaMs: 0 });
      for (const r of replicas) metrics.backendUp.set({ backend: name, replica: r.id }, 0);
    }
  }

  /** Replicas that may take traffic now. Before the first probe answers, unknown replicas count as routable. */
  routable(backend: string): Replica[] {
    const b = this.backends.get(backend);
    if (b === undefined) return [];
    const ready = b.replicas.filter((r) => r.state === 'ready');
    return ready.length > 0 ? ready : b.replicas.filter((r) => r.state === 'unknown');
  }

  canServe(backend: string): boolean {
    return this.routable(backend).length > 0;
  }

  /** Backend answered ready and compatible on its last probe (for /health: "ready", not optimistic). */
  isReady(backend: string): boolean {
    return this.backends.get(backend)?.replicas.some((r) => r.state === 'ready') ?? false;
  }

  /**
   * Divide `n` inputs among the routable replicas, least loaded first (by inputs in flight plus those just
   * assigned), so 32 inputs over 4 idle replicas become 8 each. Returns per replica how many inputs it takes,
   * in replica order; the caller keeps the inputs' relative order within each replica.
   */
  shard(backend: string, n: number): { replica: Replica; count: number }[] {
    const rs = this.routable(backend);
    if (rs.length === 0) return [];
    const load = rs.map((r) => r.inFlightInputs);
    const take = rs.map(() => 0);
    for (let k = 0; k < n; k++) {
      let best = 0;
      for (let i = 1; i < rs.length; i++) if (load[i]! < load[best]!) best = i;
      load[best]!++;
      take[best]!++;
    }
    return rs.map((replica, i) => ({ replica, count: take[i]! })).filter((x) => x.count > 0);
  }

  /** Per-replica concurrency limit (max_in_flight) and how long an excess sub-request may queue. */
  limitOf(backend: string): { max: number; queueMs: number | undefined } | undefined {
    const b = this.config.backends[backend];
    if (b?.max_in_flight === undefined) return undefined;
    return { max: b.max_in_flight, queueMs: b.queue_timeout_s === undefined ? undefined : b.queue_timeout_s * 1000 };
  }

  timeoutMs(backend: string): number {
    return this.backends.get(backend)?.timeoutMs ?? 60_000;
  }

  /** Expected latency of a sub-request to this backend (0 until one has succeeded). */
  expectedMs(backend: string): number {
    return this.backends.get(backend)?.ewmaMs ?? 0;
  }

  /** A request (with its latency) or probe succeeded on this replica. */
  recordSuccess(r: Replica, latencyMs?: number): void {
    r.consecutiveFailures = 0;
    const b = this.backends.get(r.backend);
    if (b !== undefined && latencyMs !== undefined) {
      b.ewmaMs = b.ewmaMs === 0 ? latencyMs : 0.8 * b.ewmaMs + 0.2 * latencyMs;
    }
  }

  /** A request or probe failed on this replica: eject after N in a row, within the share allowed. */
  recordFailure(r: Replica, reason: string, now = Date.now()): void {
    r.lastError = reason;
    r.consecutiveFailures++;
    const b = this.backends.get(r.backend);
    if (b === undefined || r.state === 'ejected' || r.state === 'incompatible') return;
    if (r.consecutiveFailures < b.ejectAfter) return;
    if (!this.mayEject(b)) return;
    r.ejections++;
    r.ejectedUntil = now + this.backoffMs(r.ejections);
    this.setState(r, 'ejected');
    this.metrics.ejections.inc({ backend: r.backend, replica: r.id });
    this.onEject?.(r);
  }

  /**
   * Never eject more than the configured share by failures alone (at least one may go when there are several),
   * so a shared cause (the gateway's own network) cannot empty a backend.
   */
  private mayEject(b: BackendUpstream): boolean {
    const ejected = b.replicas.filter((x) => x.state === 'ejected').length;
    const allowed = Math.max(b.replicas.length > 1 ? 1 : 0, Math.floor(b.replicas.length * this.config.max_ejected_share));
    return ejected < allowed;
  }

  /** Another gateway replica ejected this replica until `until` (epoch ms): follow it, within the same share. */
  applyRemoteEjection(r: Replica, until: number, now = Date.now()): boolean {
    const b = this.backends.get(r.backend);
    if (b === undefined || until <= now || r.state === 'ejected' || r.state === 'incompatible') return false;
    if (!this.mayEject(b)) return false;
    r.ejectedUntil = until;
    r.lastError = 'ejected by another gateway replica';
    this.setState(r, 'ejected');
    return true;
  }

  /** The n-th ejection in a row lasts probe_interval_s doubled n-1 times, capped at eject_max_s. */
  backoffMs(n: number): number {
    return Math.min(this.config.eject_max_s, this.config.probe_interval_s * 2 ** Math.max(0, n - 1)) * 1000;
  }

  /**
   * A ready replica that has stayed healthy for as long as its last backoff forgets one ejection, so a replica
   * that flapped once last week is not ejected for eject_max_s at its next hiccup. `ejectedUntil` doubles as
   * the start of the healthy period (Replica has no other field for it, and it is not read while ready).
   */
  forgive(r: Replica, now = Date.now()): void {
    if (r.state !== 'ready' || r.ejections === 0) return;
    if (now - r.ejectedUntil < this.backoffMs(r.ejections)) return;
    r.ejections--;
    r.ejectedUntil = now;
  }

  setState(r: Replica, state: Replica['state']): void {
    r.state = state;
    this.metrics.backendUp.set({ backend: r.backend, replica: r.id }, state === 'ready' ? 1 : 0);
  }

  all(): Replica[] {
    return [...this.backends.values()].flatMap((b) => b.replicas);
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((r) => r.close()));
  }
}
