/**
 * Prometheus metrics (docs/operations.md#metrics), one registry per app instance. Every series whose label values
 * come from config exists at 0 from the start: a dashboard shows 0 rather than "no data", and `rate()` sees the
 * first event as an increase.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { agentTables } from './config/agents.js';
import { DEFAULT_LATENCY_BUCKETS_S, type GatewayConfig, type RouteConfig } from './config/schema.js';
import { GATEWAY_ERROR_CODES, MAX_CODE_LABEL_CHARS } from './errors.js';
import type { StoreHealth, StoreStats } from './state/types.js';
import { MetricCells } from './metric-cells.js';
import type { LeCounts } from './stats/histogram-quantile.js';

const OVERHEAD_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
export const MAX_CODES_PER_BACKEND = 50;

export const BATCH_ENDPOINT = '/v1/responses';
/** fastify's route pattern: agent names are not label values. */
export const AGENT_BATCH_ENDPOINT = '/agents/:agent/v1/responses';

export const ANONYMOUS_CLIENT = 'anonymous';

const CLIENT_LIMITS = ['batches_in_flight', 'candidates_per_minute'] as const;

type StoreFigures = Pick<StoreHealth, 'kind' | 'isUp' | 'stats'>;

interface MetricsOptions {
  defaultMetrics?: boolean;
  latencyBucketsS?: readonly number[];
  version?: string;
}

const BACKEND_OUTCOMES = ['ok', 'cancelled', ...GATEWAY_ERROR_CODES.filter((c) => c !== 'gateway_no_backend')];
const SHADOW_OUTCOMES = ['ok', 'failed', 'invalid', 'dropped', 'no_backend', 'shed'];
const REPLAY_OUTCOMES = ['hit', 'miss', 'too_large'];

/** In the order the report lists them (experiments/feedback.ts). */
export const METRIC_OUTCOMES = ['tool_succeeded', 'tool_failed', 'env_error', 'failure_reason', 'unparsed'] as const;

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly codes = new Map<string, Set<string>>();
  private readonly zeroed = new Set<string>();
  private store: StoreFigures | undefined;
  private readonly latencyBuckets: number[];

  readonly httpRequests: Counter<'endpoint' | 'status_code' | 'client'>;
  private readonly httpCells: MetricCells<'endpoint' | 'status_code' | 'client'>;
  readonly httpDuration: Histogram<'endpoint' | 'client'>;
  readonly inputs = this.counter('magma_gateway_inputs_total', ['agent', 'route', 'backend'],
    'Inputs routed, by agent, routing rule and backend.', (): void => this.inputCells.flush());
  readonly candidates = this.counter('magma_gateway_candidates_total', ['agent', 'route', 'backend', 'status'],
    'Candidates returned to clients, by agent, route, producing backend and status.', (): void => this.candidateCells.flush());
  readonly candidateErrors = this.counter('magma_gateway_candidate_errors_total', ['agent', 'backend', 'code'],
    'Error candidates by agent, backend and error code (gateway_* codes are the gateway\'s own).');
  readonly backendRequests = this.counter('magma_gateway_backend_requests_total', ['backend', 'outcome'],
    'Sub-requests sent to backends, by outcome (ok or a gateway_* failure code).', (): void => this.backendRequestCells.flush());
  readonly backendDuration: Histogram<'backend'>;
  readonly backendInFlight = this.gauge('magma_gateway_backend_in_flight', ['backend'],
    'Sub-requests in flight per backend.', (): void => this.inFlightCells.flush());
  // The batch path's counts (metric-cells.ts): flushed into the series above when the registry is read.
  private readonly inputCells = new MetricCells(['agent', 'route', 'backend'], this.inputs);
  private readonly candidateCells = new MetricCells(['agent', 'route', 'backend', 'status'], this.candidates);
  private readonly backendRequestCells = new MetricCells(['backend', 'outcome'], this.backendRequests);
  private readonly inFlightCells = new MetricCells(['backend'], this.backendInFlight);
  readonly backendUp = this.gauge('magma_gateway_backend_up', ['backend', 'replica'],
    '1 when the replica is ready and compatible, 0 otherwise.');
  readonly ejections = this.counter('magma_gateway_backend_ejections_total', ['backend', 'replica'],
    'Replicas ejected after consecutive failures.');
  readonly probeFailures = this.counter('magma_gateway_probe_failures_total', ['backend', 'replica'],
    'Failed /health or /v1/info probes.');
  readonly fallbacks = this.counter('magma_gateway_fallbacks_total', ['agent', 'route', 'from', 'to'],
    'Inputs moved to a fallback backend after a failure.');
  readonly retries = this.counter('magma_gateway_retries_total', ['backend'],
    'Sub-requests retried on another replica of the same backend after a connect failure.');
  readonly retryBudgetExhausted = this.counter('magma_gateway_retry_budget_exhausted_total', ['backend'],
    'Retries or fallbacks refused because the retry budget was spent.');
  readonly overhead: Histogram = this.histogram('magma_gateway_overhead_seconds', [],
    'Time spent in the gateway itself per batch (parsing, validation, planning, assembly), excluding waiting on backends.', OVERHEAD_BUCKETS);
  readonly shadowRequests = this.counter('magma_gateway_shadow_requests_total', ['agent', 'route', 'backend', 'outcome'],
    'Shadow copies sent, by outcome (ok, failed, invalid, dropped, shed: dropped for the memory budget).');
  readonly shadowAgreement = this.counter('magma_gateway_shadow_agreement_total', ['agent', 'route', 'backend', 'agreed'],
    'Shadow decisions compared with the primary\'s (same tool calls and say).');
  readonly executionFeedback = this.counter('magma_gateway_execution_feedback_total', ['agent', 'route', 'backend', 'outcome'],
    'Environment feedback attributed to the backend whose decision it reports on.');
  readonly trajectoriesStarted = this.counter('magma_gateway_trajectories_started_total', ['agent', 'route', 'arm'],
    'Trajectories started on an experiment route, by the arm they were assigned (docs/experiments.md).');
  readonly trajectoriesLeftOut = this.counter('magma_gateway_trajectories_left_out_total', ['agent', 'route'],
    'Trajectories started after their experiment held experiments.max_trajectories: not counted, not stored (docs/experiments.md).');
  readonly indexDropped = this.counter('magma_gateway_experiment_index_dropped_total', ['agent', 'route', 'index'],
    'Experiment index writes left out at a bound: trace_hash (experiments.hash_candidates_max), export (experiments.export_max_trajectories), steps (1000 per trajectory).');
  readonly rejectedTags = this.counter('magma_gateway_experiment_rejected_tags_total', ['agent', 'route', 'reason'],
    'Inputs on an experiment route whose memory tag was not trusted (unsigned, bad signature, impossible counters) and started a new trajectory.');
  readonly srmFlagged = this.gauge('magma_gateway_experiment_srm_flagged', ['agent', 'route'],
    '1 while the last report found a sample-ratio mismatch on the route (docs/experiments.md), else 0.');
  readonly outcomes = this.counter('magma_gateway_experiment_outcomes_total', ['result'],
    'Episode outcomes posted: accepted, duplicate, conflict, replay, superseded, unknown, ambiguous, unmatched.');
  readonly replay = this.counter('magma_gateway_replay_total', ['outcome'],
    'Idempotent replay lookups: hit, miss, waited, too_large, memory_budget (no room for the stored copy).');
  readonly replayConflicts = this.counter('magma_gateway_replay_conflicts_total', [],
    'A request_id seen again with a different body (computed normally).');
  readonly storeUp = this.gauge('magma_gateway_store_up', [],
    '1 while the shared state store (Redis) is reachable, or for the in-memory store.');
  readonly storeFallbackActive: Gauge = this.gauge('magma_gateway_store_fallback_active', [],
    '1 while the Redis store answers from per-process state because Redis is unavailable; 0 otherwise.', (): void => {
      const s = this.store;
      this.storeFallbackActive.set(s !== undefined && s.kind === 'redis' && !s.isUp() ? 1 : 0);
    });
  readonly storeFallbacks = this.storeCounter('magma_gateway_store_fallbacks_total', 'fallbacks',
    'Store operations answered from per-process state because Redis was unavailable.');
  readonly storeLeasesLost = this.storeCounter('magma_gateway_store_leases_lost_total', 'leasesLost',
    'Permits whose Redis lease was dropped while still held (a long stall or an outage).');
  readonly permitTimeouts = this.storeCounter('magma_gateway_permit_timeouts_total', 'acquireTimeouts',
    'Sub-requests that waited queue_timeout_s for a max_in_flight permit and got none.');
  readonly reloads = this.counter('magma_gateway_config_reloads_total', ['result'],
    'Config reloads, by result (ok, refused).');
  readonly buildInfo = this.gauge('magma_gateway_build_info', ['version'],
    'Always 1; the version label says which gateway build is running.');
  /** Read at scrape time: nothing is written per batch. */
  memorySource: { readonly bytesHeld: number; readonly waiting: number; readonly limit: number } | undefined;
  readonly memoryHeld: Gauge = this.gauge('magma_gateway_memory_budget_held_bytes', [],
    'Bytes held for batches now under server.memory_budget_mb: request bodies, their index estimates, backend and shadow answers, streamed answers waiting for their client.',
    (): void => this.memoryHeld.set(this.memorySource?.bytesHeld ?? 0));
  readonly memoryLimit: Gauge = this.gauge('magma_gateway_memory_budget_bytes', [],
    'server.memory_budget_mb in bytes (configured or derived at start).', (): void => this.memoryLimit.set(this.memorySource?.limit ?? 0));
  readonly admissionWaiting: Gauge = this.gauge('magma_gateway_admission_waiting', [],
    'Requests waiting for room under server.memory_budget_mb.', (): void => this.admissionWaiting.set(this.memorySource?.waiting ?? 0));
  readonly admissionTimeouts = this.counter('magma_gateway_admission_timeouts_total', [],
    'Requests answered 503 GATEWAY_ERR_MEMORY_BUDGET after waiting server.admission_timeout_s for room.');
  readonly shadowsShed = this.counter('magma_gateway_shadows_shed_total', [],
    'Shadow copies dropped (not sent, or their answer abandoned) to leave room under server.memory_budget_mb.');
  readonly admissionWait: Histogram;
  readonly clientLimitWaits = this.counter('magma_gateway_client_limit_waits_total', ['client', 'limit'],
    'Batches that did not fit their client\'s limits at once and waited, by client and the limit in the way.');
  readonly clientLimitOverloaded = this.counter('magma_gateway_client_limit_overloaded_total', ['client', 'limit'],
    'Batches answered with gateway_overloaded candidates because their client stayed over a limit for max_wait_s.');
  readonly clientLimitsLocalOnly = this.counter('magma_gateway_client_limits_local_only_total', ['client', 'limit'],
    'Batches admitted by their client\'s limits in this process alone because Redis (state.redis) was unavailable: across replicas the limit may have been exceeded meanwhile.');

  readonly clientLimitWait: Histogram<'client'>;
  clientLimitsSource: { waitingByClient(): Map<string, number> } | undefined;
  readonly clientLimitWaiting: Gauge<'client'> = this.gauge('magma_gateway_client_limit_waiting', ['client'],
    'Batches waiting now for their client\'s max_batches_in_flight or max_candidates_per_minute.', (): void => {
      // A client removed by a reload has no series left to report.
      this.clientLimitWaiting.reset();
      for (const [client, n] of this.clientLimitsSource?.waitingByClient() ?? []) this.clientLimitWaiting.set({ client }, n);
    });

  constructor(opts: MetricsOptions = {}) {
    this.latencyBuckets = [...(opts.latencyBucketsS ?? DEFAULT_LATENCY_BUCKETS_S)];
    this.admissionWait = this.histogram('magma_gateway_admission_wait_seconds', [],
      'How long requests that had to wait for room under server.memory_budget_mb waited.', this.latencyBuckets);
    this.httpRequests = this.counter('magma_gateway_http_requests_total', ['endpoint', 'status_code', 'client'],
      'HTTP requests answered by the gateway, by endpoint (URL path pattern), status code and client (clients: names, anonymous, unauthorized).',
      (): void => this.httpCells.flush());
    this.httpCells = new MetricCells(['endpoint', 'status_code', 'client'], this.httpRequests);
    this.httpDuration = this.histogram('magma_gateway_http_request_duration_seconds', ['endpoint', 'client'],
      'Time to answer an HTTP request, by endpoint (a whole batch for /v1/responses) and client.', this.latencyBuckets);
    this.clientLimitWait = this.histogram('magma_gateway_client_limit_wait_seconds', ['client'],
      'How long batches that waited for their client\'s limits waited (served or not).', this.latencyBuckets);
    this.backendDuration = this.histogram('magma_gateway_backend_request_duration_seconds', ['backend'],
      'Backend sub-request latency.', this.latencyBuckets);
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.storeUp.set(1);
    this.buildInfo.set({ version: opts.version ?? 'unknown' }, 1);
  }

  observeHttp(endpoint: string, status: number, seconds: number, client: string): void {
    this.httpCells.add(1, endpoint, statusText(status), client);
    this.httpDuration.observe({ endpoint, client }, seconds);
  }

  countInput(agent: string, route: string, backend: string): void {
    this.inputCells.add(1, agent, route, backend);
  }

  countCandidates(agent: string, route: string, backend: string, status: string, n: number): void {
    this.candidateCells.add(n, agent, route, backend, status);
  }

  countBackendRequest(backend: string, outcome: string): void {
    this.backendRequestCells.add(1, backend, outcome);
  }

  backendInFlightBy(backend: string, delta: number): void {
    this.inFlightCells.add(delta, backend);
  }

  bindStore(store: StoreFigures): void {
    this.store = store;
  }

  private counter<L extends string>(name: string, labelNames: readonly L[], help: string, collect?: () => void): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry], collect });
  }

  private gauge<L extends string>(name: string, labelNames: readonly L[], help: string, collect?: () => void): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry], collect });
  }

  private histogram<L extends string>(name: string, labelNames: readonly L[], help: string, buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  private storeCounter(name: string, field: keyof StoreStats, help: string): Counter {
    const counter: Counter = this.counter(name, [], help, () => {
      counter.reset();
      counter.inc(this.store?.stats()[field] ?? 0);
    });
    return counter;
  }

  private zeroHistogram<L extends string>(h: Histogram<L>, labels: Record<L, string>): void {
    const key = `${h === this.httpDuration ? 'http' : h === this.clientLimitWait ? 'client' : 'backend'}\n${JSON.stringify(labels)}`;
    if (this.zeroed.has(key)) return;
    this.zeroed.add(key);
    h.zero(labels);
  }

  /** Adding 0 leaves a live series as it is: a reload adds its new series. */
  initSeries(config: GatewayConfig, routeBackends: (route: RouteConfig) => string[]): void {
    for (const [backend, b] of Object.entries(config.backends)) {
      for (const outcome of BACKEND_OUTCOMES) this.backendRequests.inc({ backend, outcome }, 0);
      this.zeroHistogram(this.backendDuration, { backend });
      this.backendInFlight.inc({ backend }, 0);
      this.retries.inc({ backend }, 0);
      this.retryBudgetExhausted.inc({ backend }, 0);
      for (let i = 0; i < b.urls.length; i++) {
        const replica = `${backend}#${i}`;
        this.ejections.inc({ backend, replica }, 0);
        this.probeFailures.inc({ backend, replica }, 0);
      }
    }
    const tables = agentTables(config);
    for (const { name: agent, routes } of tables) {
      const reached = new Set<string>();
      for (const r of routes) {
        const route = r.name;
        for (const backend of routeBackends(r)) {
          reached.add(backend);
          this.inputs.inc({ agent, route, backend }, 0);
          for (const status of ['completed', 'error']) this.candidates.inc({ agent, route, backend, status }, 0);
          for (const outcome of METRIC_OUTCOMES) this.executionFeedback.inc({ agent, route, backend, outcome }, 0);
          // A leg of `backend` falls back along the route's fallbacks without itself (routing/plan.ts).
          let from = backend;
          for (const to of r.fallback.filter((f) => f !== backend)) {
            this.fallbacks.inc({ agent, route, from, to }, 0);
            from = to;
          }
        }
        for (const backend of r.shadow) {
          for (const outcome of SHADOW_OUTCOMES) this.shadowRequests.inc({ agent, route, backend, outcome }, 0);
          for (const agreed of ['true', 'false']) this.shadowAgreement.inc({ agent, route, backend, agreed }, 0);
        }
      }
      for (const backend of reached) for (const code of GATEWAY_ERROR_CODES) this.candidateErrors.inc({ agent, backend, code }, 0);
    }
    const clients = config.clients === undefined ? [ANONYMOUS_CLIENT] : Object.keys(config.clients);
    for (const endpoint of tables.some((t) => t.virtual) ? [BATCH_ENDPOINT, AGENT_BATCH_ENDPOINT] : [BATCH_ENDPOINT]) {
      for (const client of clients) {
        this.httpRequests.inc({ endpoint, status_code: '200', client }, 0);
        this.zeroHistogram(this.httpDuration, { endpoint, client });
      }
    }
    for (const [client, c] of Object.entries(config.clients ?? {})) {
      const limits = CLIENT_LIMITS.filter((l) => (l === 'batches_in_flight' ? c.max_batches_in_flight : c.max_candidates_per_minute) !== undefined);
      if (limits.length === 0) continue;
      for (const limit of limits) {
        this.clientLimitWaits.inc({ client, limit }, 0);
        this.clientLimitOverloaded.inc({ client, limit }, 0);
      }
      this.zeroHistogram(this.clientLimitWait, { client });
    }
    for (const outcome of REPLAY_OUTCOMES) this.replay.inc({ outcome }, 0);
    for (const result of ['ok', 'refused']) this.reloads.inc({ result }, 0);
  }

  /** A backend's first MAX_CODES_PER_BACKEND distinct codes, then `other`: a label value is held in every scrape. */
  codeLabel(backend: string, code: string): string {
    if (code.length > MAX_CODE_LABEL_CHARS) return 'other';
    let seen = this.codes.get(backend);
    if (seen === undefined) this.codes.set(backend, (seen = new Set()));
    if (seen.has(code)) return code;
    if (seen.size >= MAX_CODES_PER_BACKEND) return 'other';
    seen.add(code);
    return code;
  }
}

/** A histogram's cumulative counts by `le` and its sample count, per value of the label `by` ('' without one). */
export async function histogramByLabel(h: Histogram<string>, by?: string): Promise<Map<string, { buckets: LeCounts; count: number }>> {
  const out = new Map<string, { buckets: LeCounts; count: number }>();
  for (const v of (await h.get()).values) {
    const key = by === undefined ? '' : String(v.labels[by] ?? '');
    let r = out.get(key);
    if (r === undefined) out.set(key, (r = { buckets: {}, count: 0 }));
    // Histogram values carry `le` beside the declared labels; prom-client's type names only the declared ones.
    if (v.metricName?.endsWith('_bucket') === true) r.buckets[String(Reflect.get(v.labels, 'le'))] = v.value;
    else if (v.metricName?.endsWith('_count') === true) r.count = v.value;
  }
  return out;
}

/** Made once each: String(status) per answer is a number-to-string conversion. */
const statusTexts = new Map<number, string>();

function statusText(status: number): string {
  let t = statusTexts.get(status);
  if (t === undefined) statusTexts.set(status, (t = String(status)));
  return t;
}
