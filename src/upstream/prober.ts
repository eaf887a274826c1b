/**
 * Probes every replica's /health and /v1/info at start and every probe_interval_s (docs/gateway-behaviour.md,
 * "Probing and ejection"), so /health
 * tells the truth and incompatible agents are never routed to. Ejected replicas are probed too: that is how they
 * come back, on the first successful probe once their backoff is over.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { GatewayConfig } from '../config/schema.js';
import type { GatewayMetrics } from '../metrics.js';
import { parseExact } from '../protocol/exact-json.js';
import { backendInfoSchema } from '../protocol/schemas.js';
import { callReplica } from './backend-call.js';
import type { Replica } from './replica.js';
import type { Upstreams } from './upstreams.js';

/** The outcome of a replica's last finished probe, for the admin API. */
export interface ProbeRecord {
  /** Date.now() when the probe started. */
  at: number;
  ok: boolean;
  ms: number;
  error?: string;
}

export class Prober {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  // Kept here rather than on Replica: only the prober writes it and only the admin API reads it.
  private readonly records = new WeakMap<Replica, ProbeRecord>();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): Promise<void> {
    const first = this.probeAll();
    this.timer = setInterval(() => {
      if (this.running === undefined) void this.probeAll();
    }, this.config.probe_interval_s * 1000);
    this.timer.unref();
    return first;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  lastProbe(r: Replica): ProbeRecord | undefined {
    return this.records.get(r);
  }

  async probeAll(): Promise<void> {
    const run = Promise.all(this.upstreams.all().map((r) => this.probe(r))).then(() => undefined);
    this.running = run;
    try {
      await run;
    } finally {
      this.running = undefined;
    }
  }

  async probe(r: Replica, now = Date.now()): Promise<void> {
    r.lastProbeAt = now;
    const error = await this.check(r, now);
    this.records.set(r, { at: now, ok: error === undefined, ms: Date.now() - now, ...(error === undefined ? {} : { error }) });
  }

  /** One probe round trip for one replica; returns why it failed, or undefined when it answered well. */
  private async check(r: Replica, now: number): Promise<string | undefined> {
    const timeoutMs = this.config.probe_timeout_s * 1000;
    const health = await callReplica(r, { method: 'GET', path: '/health', timeoutMs });
    if (!health.ok || health.status < 200 || health.status >= 300) {
      return this.fail(r, health.ok ? `/health answered ${health.status}` : `/health: ${health.failure.message}`);
    }
    const info = await callReplica(r, { method: 'GET', path: '/v1/info', timeoutMs });
    if (!info.ok || info.status !== 200) {
      return this.fail(r, info.ok ? `/v1/info answered ${info.status}` : `/v1/info: ${info.failure.message}`);
    }
    let parsed;
    try {
      parsed = backendInfoSchema.safeParse(parseExact(info.text).value);
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) return this.fail(r, '/v1/info is not a valid AgentInfo');
    r.info = parsed.data;
    if (parsed.data.protocol_version !== '2.0' || parsed.data.capabilities.inference !== true) {
      if (r.state !== 'incompatible') {
        this.log.warn(
          { backend: r.backend, replica: r.id, protocol_version: parsed.data.protocol_version },
          'backend replica is incompatible (needs protocol 2.0 and inference: true); it will not be routed to',
        );
      }
      r.lastError = 'incompatible: needs protocol_version "2.0" and capabilities.inference true';
      this.upstreams.setState(r, 'incompatible');
      return r.lastError;
    }
    this.upstreams.recordSuccess(r);
    if (r.state === 'ejected' && now < r.ejectedUntil) return undefined; // healthy again, but the backoff is not over
    if (r.state === 'ejected') {
      this.log.info({ backend: r.backend, replica: r.id, ejections: r.ejections }, 'backend replica back after ejection');
      // From here, ejectedUntil marks the start of the healthy period that forgive() measures.
      r.ejectedUntil = now;
    } else if (r.state !== 'ready') {
      this.log.info({ backend: r.backend, replica: r.id }, 'backend replica ready');
    }
    this.upstreams.setState(r, 'ready');
    this.upstreams.forgive(r, now);
    return undefined;
  }

  private fail(r: Replica, why: string): string {
    this.metrics.probeFailures.inc({ backend: r.backend, replica: r.id });
    const wasReady = r.state === 'ready';
    this.upstreams.recordFailure(r, why);
    if (r.state !== 'ejected') this.upstreams.setState(r, 'not_ready');
    if (wasReady) this.log.warn({ backend: r.backend, replica: r.id, reason: why }, 'backend replica not ready');
    return why;
  }
}
