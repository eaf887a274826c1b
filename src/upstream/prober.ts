/** Probes every replica, ejected ones too, each on its own schedule (docs/operations.md#probing-and-ejection). */
import type { Logger } from '../logging.js';
import { BatchSignal } from '../abort.js';
import type { GatewayConfig } from '../config/schema.js';
import type { GatewayMetrics } from '../metrics.js';
import { parseExact } from '../protocol/json/exact-json.js';
import { backendInfoSchema } from '../protocol/schemas.js';
import { callReplica } from './call-replica.js';
import type { Replica } from './replica.js';
import type { ProbeOutcome, Upstreams } from './upstreams.js';

interface ProbeRecord {
  at: number;
  ok: boolean;
  ms: number;
  error?: string;
}

interface Schedule {
  timer: NodeJS.Timeout | undefined;
  running: BatchSignal | undefined;
}

export class Prober {
  private stopped = false;
  private readonly schedules = new Map<Replica, Schedule>();
  // Kept here rather than on Replica: only the prober writes it and only the admin API reads it.
  private readonly records = new WeakMap<Replica, ProbeRecord>();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
    private readonly log: Logger,
  ) {}

  /** Resolves when each replica has finished its first probe. */
  start(): Promise<void> {
    const firsts = this.upstreams.all().map((r) => {
      const s: Schedule = { timer: undefined, running: undefined };
      this.schedules.set(r, s);
      return this.run(r, s);
    });
    return Promise.all(firsts).then(() => undefined);
  }

  /** A probe in flight is cancelled and its outcome dropped (the pools are closing). */
  stop(): void {
    this.stopped = true;
    for (const s of this.schedules.values()) {
      if (s.timer !== undefined) clearTimeout(s.timer);
      s.running?.abort();
    }
  }

  lastProbe(r: Replica): ProbeRecord | undefined {
    return this.records.get(r);
  }

  private run(r: Replica, s: Schedule): Promise<void> {
    s.timer = undefined;
    const started = Date.now();
    const signal = new BatchSignal();
    s.running = signal;
    return this.probe(r, signal)
      // A bug here must not end this replica's probing nor reach the process as an unhandled rejection.
      .catch((err: unknown) => this.log.error({ err, backend: r.backend, replica: r.id }, 'probe failed unexpectedly'))
      .finally(() => {
        s.running = undefined;
        if (this.stopped) return;
        s.timer = setTimeout(() => void this.run(r, s), Math.max(0, started + this.config.probe_interval_s * 1000 - Date.now()));
        s.timer.unref();
      });
  }

  private async probe(r: Replica, signal: BatchSignal): Promise<void> {
    const at = Date.now();
    const timeoutMs = this.config.probe_timeout_s * 1000;
    const timer = setTimeout(() => signal.abort(), timeoutMs);
    let outcome: ProbeOutcome;
    try {
      outcome = await this.check(r, at + timeoutMs, signal);
    } finally {
      clearTimeout(timer);
    }
    if (this.stopped) return;
    const error = outcome.kind === 'ok' ? undefined : outcome.reason;
    this.records.set(r, { at, ok: error === undefined, ms: Date.now() - at, ...(error === undefined ? {} : { error }) });
    if (outcome.kind === 'failed') this.metrics.probeFailures.inc({ backend: r.backend, replica: r.id });
    const { from, to } = this.upstreams.recordProbe(r, outcome);
    if (from === to) return;
    const who = { backend: r.backend, replica: r.id };
    if (to === 'incompatible') {
      this.log.warn(
        { ...who, protocol_version: r.info?.protocol_version },
        'backend replica is incompatible (needs protocol 2.0 and inference: true); it will not be routed to',
      );
    } else if (to === 'ready') {
      if (from === 'ejected') this.log.info({ ...who, ejections: r.ejections }, 'backend replica back after ejection');
      else this.log.info(who, 'backend replica ready');
    } else if (from === 'ready') {
      this.log.warn({ ...who, reason: error }, 'backend replica not ready');
    }
  }

  private async check(r: Replica, end: number, signal: BatchSignal): Promise<ProbeOutcome> {
    const call = (path: string) =>
      callReplica(r, { method: 'GET', path, timeoutMs: Math.max(1, end - Date.now()), signal,
        timeoutKey: 'probe_timeout_s', maxBytes: this.config.probe_max_response_kb * 1024, maxBytesKey: 'probe_max_response_kb' });
    // The call's own timer and the round's signal end at the same moment, and either may fire first: one reason for both.
    const why = (path: string, failure: { code: string; message: string }): string =>
      signal.aborted || failure.code === 'gateway_backend_timeout'
        ? `${path}: no whole answer within probe_timeout_s (${this.config.probe_timeout_s} s)`
        : `${path}: ${failure.message}`;
    const health = await call('/health');
    if (!health.ok || health.status < 200 || health.status >= 300) {
      return { kind: 'failed', reason: health.ok ? `/health answered ${health.status}` : why('/health', health.failure) };
    }
    const info = await call('/v1/info');
    if (!info.ok || info.status !== 200) {
      return { kind: 'failed', reason: info.ok ? `/v1/info answered ${info.status}` : why('/v1/info', info.failure) };
    }
    let parsed;
    try {
      parsed = backendInfoSchema.safeParse(parseExact(info.text, { maxDepth: this.config.server.max_json_depth }).value);
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) return { kind: 'failed', reason: '/v1/info is not a valid AgentInfo' };
    if (parsed.data.protocol_version !== '2.0' || parsed.data.capabilities.inference !== true) {
      return {
        kind: 'incompatible',
        info: parsed.data,
        reason: 'incompatible: needs protocol_version "2.0" and capabilities.inference true',
      };
    }
    return { kind: 'ok', info: parsed.data };
  }
}
