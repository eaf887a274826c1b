/** Every backend's replicas and the one writer of their state (docs/operations.md#probing-and-ejection). */
import { mbToBytes, type GatewayConfig } from '../config/schema.js';
import type { GatewayMetrics } from '../metrics.js';
import type { AgentInfo } from '../protocol/types.js';
import { readBackendTls } from '../config/tls-files.js';
import { freshRecord, Replica, type ReplicaRecord, type ReplicaState } from './replica.js';
import { GatewayError } from '../errors.js';

interface BackendUpstream {
  readonly name: string;
  readonly replicas: readonly Replica[];
  readonly timeoutMs: number;
  readonly ejectAfter: number;
  readonly ewmaMs: number;
}

type MutableBackend = { -readonly [K in keyof BackendUpstream]: BackendUpstream[K] };

export type ProbeOutcome =
  | { kind: 'ok'; info: AgentInfo }
  | { kind: 'incompatible'; info: AgentInfo; reason: string }
  | { kind: 'failed'; reason: string };

// Satisfies routing's RoutingSnapshot structurally: the planner's view of upstreams, declared where it is read.
export class Upstreams {
  private readonly byName = new Map<string, MutableBackend>();
  onEject: ((r: Replica) => void) | undefined;
  private readonly records = new Map<Replica, ReplicaRecord>();

  constructor(
    private readonly config: GatewayConfig,
    private readonly metrics: GatewayMetrics,
    /** Injected by tests: a fake clock. */
    private readonly clock: () => number = Date.now,
  ) {
    for (const [name, b] of Object.entries(config.backends)) {
      const tls = readBackendTls(name, b.tls);
      const replicas = b.urls.map((url, index) => {
        const record = freshRecord();
        const r = new Replica(
          {
            backend: name, index, url, connectTimeoutMs: b.connect_timeout_s * 1000, headers: b.headers,
            maxResponseBytes: mbToBytes(b.max_response_mb), maxJsonDepth: config.server.max_json_depth,
            maxMemoryKeyRepeats: config.server.max_memory_key_repeats,
            ...(tls === undefined ? {} : { tls }),
          },
          record,
        );
        this.records.set(r, record);
        return r;
      });
      this.byName.set(name, { name, replicas, timeoutMs: b.timeout_s * 1000, ejectAfter: b.eject_after_failures, ewmaMs: 0 });
      for (const r of replicas) metrics.backendUp.set({ backend: name, replica: r.id }, 0);
    }
  }

  get backends(): ReadonlyMap<string, BackendUpstream> {
    return this.byName;
  }

  /** Replicas that may take traffic now, minus `exclude`; unknown ones (not probed yet) only when none is ready. */
  routable(backend: string, exclude?: ReadonlySet<Replica>): Replica[] {
    const b = this.backends.get(backend);
    if (b === undefined) return [];
    const rs = exclude === undefined ? b.replicas : b.replicas.filter((r) => !exclude.has(r));
    const ready = rs.filter((r) => r.state === 'ready');
    return ready.length > 0 ? ready : rs.filter((r) => r.state === 'unknown');
  }

  canServe(backend: string): boolean {
    return this.routable(backend).length > 0;
  }

  isReady(backend: string): boolean {
    return this.backends.get(backend)?.replicas.some((r) => r.state === 'ready') ?? false;
  }

  /** How many of `n` inputs each routable replica takes: least loaded first. */
  shard(backend: string, n: number, exclude?: ReadonlySet<Replica>): { replica: Replica; count: number }[] {
    const rs = this.routable(backend, exclude);
    const [only] = rs;
    if (rs.length === 1 && only !== undefined && n > 0) return [{ replica: only, count: n }];
    const shares = rs.map((replica) => ({ replica, load: replica.inFlightInputs, count: 0 }));
    for (let k = 0; k < n; k++) {
      let best = shares[0];
      for (const s of shares) if (best === undefined || s.load < best.load) best = s;
      if (best === undefined) break;
      best.load++;
      best.count++;
    }
    return shares.filter((s) => s.count > 0).map(({ replica, count }) => ({ replica, count }));
  }

  limitOf(backend: string): { max: number; queueMs: number | undefined } | undefined {
    const b = this.config.backends[backend];
    if (b?.max_in_flight === undefined) return undefined;
    return { max: b.max_in_flight, queueMs: b.queue_timeout_s === undefined ? undefined : b.queue_timeout_s * 1000 };
  }

  timeoutMs(backend: string): number {
    return this.backends.get(backend)?.timeoutMs ?? 60_000;
  }

  expectedMs(backend: string): number {
    return this.backends.get(backend)?.ewmaMs ?? 0;
  }

  attemptStarted(r: Replica, inputs: number): void {
    const rec = this.rec(r);
    rec.inFlightInputs += inputs;
    rec.inFlightRequests++;
    this.metrics.backendInFlightBy(r.backend, 1);
  }

  attemptEnded(r: Replica, inputs: number): void {
    const rec = this.rec(r);
    rec.inFlightInputs -= inputs;
    rec.inFlightRequests--;
    this.metrics.backendInFlightBy(r.backend, -1);
  }

  recordSuccess(r: Replica, latencyMs: number): void {
    this.rec(r).consecutiveFailures = 0;
    const b = this.byName.get(r.backend);
    if (b !== undefined) b.ewmaMs = b.ewmaMs === 0 ? latencyMs : 0.8 * b.ewmaMs + 0.2 * latencyMs;
  }

  recordFailure(r: Replica, reason: string): void {
    const rec = this.rec(r);
    rec.lastError = reason;
    rec.consecutiveFailures++;
    const b = this.backends.get(r.backend);
    if (b === undefined || rec.state === 'ejected' || rec.state === 'incompatible') return;
    if (rec.consecutiveFailures < b.ejectAfter || !this.mayEject(b)) return;
    this.eject(r, rec, this.clock() + this.backoffMs(rec.ejections + 1));
    rec.ejections++;
    this.metrics.ejections.inc({ backend: r.backend, replica: r.id });
    this.onEject?.(r);
  }

  /** Nothing was sent: not_ready at once, beyond max_ejected_share. */
  recordConnectFailure(r: Replica, reason: string): void {
    this.recordFailure(r, reason);
    const rec = this.rec(r);
    if (rec.state === 'ready' || rec.state === 'unknown') this.setState(r, rec, 'not_ready');
  }

  /** A replica healthy for as long as its last backoff forgets an ejection: an old flap is not held against it. */
  recordProbe(r: Replica, outcome: ProbeOutcome): { from: ReplicaState; to: ReplicaState } {
    const rec = this.rec(r);
    const from = rec.state;
    const now = this.clock();
    if (outcome.kind === 'failed') {
      this.recordFailure(r, outcome.reason);
      if (rec.state !== 'ejected') this.setState(r, rec, 'not_ready');
      return { from, to: rec.state };
    }
    rec.info = outcome.info;
    if (outcome.kind === 'incompatible') {
      rec.lastError = outcome.reason;
      this.setState(r, rec, 'incompatible');
      return { from, to: rec.state };
    }
    rec.consecutiveFailures = 0;
    if (from === 'ejected' && now < rec.ejectedUntil) return { from, to: from }; // healthy, but the backoff runs
    if (from !== 'ready') rec.healthySince = now;
    this.setState(r, rec, 'ready');
    if (rec.ejections > 0 && now - rec.healthySince >= this.backoffMs(rec.ejections)) {
      rec.ejections--;
      rec.healthySince = now;
    }
    return { from, to: 'ready' };
  }

  applyRemoteEjection(r: Replica, until: number): boolean {
    const rec = this.rec(r);
    const b = this.backends.get(r.backend);
    if (b === undefined || until <= this.clock() || rec.state === 'ejected' || rec.state === 'incompatible') return false;
    if (!this.mayEject(b)) return false;
    rec.lastError = 'ejected by another gateway replica';
    this.eject(r, rec, until);
    return true;
  }

  /** A reload does not hand a flapping replica a clean slate; in-flight counts stay with the old pools. */
  inherit(from: Upstreams): void {
    const old = new Map(from.all().map((r) => [`${r.backend}\n${r.url}`, from.rec(r)]));
    for (const r of this.all()) {
      const prev = old.get(`${r.backend}\n${r.url}`);
      if (prev === undefined) continue;
      const rec = this.rec(r);
      const { inFlightInputs, inFlightRequests } = rec;
      Object.assign(rec, prev, { inFlightInputs, inFlightRequests });
      this.setState(r, rec, prev.state);
    }
  }

  /** The n-th ejection in a row lasts probe_interval_s doubled n-1 times, capped at eject_max_s. */
  backoffMs(n: number): number {
    return Math.min(this.config.eject_max_s, this.config.probe_interval_s * 2 ** Math.max(0, n - 1)) * 1000;
  }

  all(): Replica[] {
    return [...this.backends.values()].flatMap((b) => b.replicas);
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((r) => r.pool.close()));
  }

  private eject(r: Replica, rec: ReplicaRecord, until: number): void {
    rec.ejectedUntil = until;
    this.setState(r, rec, 'ejected');
  }

  /** At least one may go when there are several; a shared cause (the gateway's network) cannot empty a backend. */
  private mayEject(b: BackendUpstream): boolean {
    const ejected = b.replicas.filter((x) => x.state === 'ejected').length;
    const allowed = Math.max(b.replicas.length > 1 ? 1 : 0, Math.floor(b.replicas.length * this.config.max_ejected_share));
    return ejected < allowed;
  }

  private setState(r: Replica, rec: ReplicaRecord, state: ReplicaState): void {
    rec.state = state;
    this.metrics.backendUp.set({ backend: r.backend, replica: r.id }, state === 'ready' ? 1 : 0);
  }

  private rec(r: Replica): ReplicaRecord {
    const rec = this.records.get(r);
    // A replica of another Upstreams (an old runtime's) is a programming error, not a backend's doing.
    if (rec === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `replica ${r.id} does not belong to these upstreams`);
    return rec;
  }
}
