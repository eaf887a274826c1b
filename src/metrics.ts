/**
 * Prometheus metrics (README "Metrics", docs/gateway-behaviour.md "Metrics"). One registry per app instance, so tests
 * can run several gateways in one
 * process. Label values are bounded: backend, replica and route names come from config, and error codes are
 * capped per backend (a backend that invents a new code per request cannot grow the series without bound).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Agent calls take from milliseconds (a cache) to minutes (a reasoning model): 10 ms .. 600 s. */
export const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const OVERHEAD_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
export const MAX_CODES_PER_BACKEND = 50;

/** Every metric name the gateway exports (the dashboard consistency test reads this list). */
export const METRIC_NAMES = [
  'magma_gateway_http_requests_total',
  'magma_gateway_http_request_duration_seconds',
  'magma_gateway_inputs_total',
  'magma_gateway_candidates_total',
  'magma_gateway_candidate_errors_total',
  'magma_gateway_backend_requests_total',
  'magma_gateway_backend_request_duration_seconds',
  'magma_gateway_backend_in_flight',
  'magma_gateway_backend_up',
  'magma_gateway_backend_ejections_total',
  'magma_gateway_probe_failures_total',
  'magma_gateway_fallbacks_total',
  'magma_gateway_retries_total',
  'magma_gateway_retry_budget_exhausted_total',
  'magma_gateway_overhead_seconds',
  'magma_gateway_shadow_requests_total',
  'magma_gateway_shadow_agreement_total',
  'magma_gateway_execution_feedback_total',
  'magma_gateway_replay_total',
  'magma_gateway_replay_conflicts_total',
  'magma_gateway_store_up',
  'magma_gateway_config_reloads_total',
] as const;

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly codes = new Map<string, Set<string>>();

  readonly httpRequests = new Counter({
    name: 'magma_gateway_http_requests_total',
    help: 'HTTP requests answered by the gateway, by endpoint and status code.',
    labelNames: ['route', 'status_code'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'magma_gateway_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (a whole batch for /v1/responses).',
    labelNames: ['route'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly inputs = new Counter({
    name: 'magma_gateway_inputs_total',
    help: 'Inputs routed, by routing rule and backend.',
    labelNames: ['route', 'backend'] as const,
    registers: [this.registry],
  });
  readonly candidates = new Counter({
    name: 'magma_gateway_candidates_total',
    help: 'Candidates returned to clients, by route, producing backend and status.',
    labelNames: ['route', 'backend', 'status'] as const,
    registers: [this.registry],
  });
  readonly candidateErrors = new Counter({
    name: 'magma_gateway_candidate_errors_total',
    help: 'Error candidates by backend and error code (gateway_* codes are the gateway\'s own).',
    labelNames: ['backend', 'code'] as const,
    registers: [this.registry],
  });
  readonly backendRequests = new Counter({
    name: 'magma_gateway_backend_requests_total',
    help: 'Sub-requests sent to backends, by outcome (ok or a gateway_* failure code).',
    labelNames: ['backend', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly backendDuration = new Histogram({
    name: 'magma_gateway_backend_request_duration_seconds',
    help: 'Backend sub-request latency.',
    labelNames: ['backend'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly backendInFlight = new Gauge({
    name: 'magma_gateway_backend_in_flight',
    help: 'Sub-requests in flight per backend.',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  readonly backendUp = new Gauge({
    name: 'magma_gateway_backend_up',
    help: '1 when the replica is ready and compatible, 0 otherwise.',
    labelNames: ['backend', 'replica'] as const,
    registers: [this.registry],
  });
  readonly ejections = new Counter({
    name: 'magma_gateway_backend_ejections_total',
    help: 'Replicas ejected after consecutive failures.',
    labelNames: ['backend', 'replica'] as const,
    registers: [this.registry],
  });
  readonly probeFailures = new Counter({
    name: 'magma_gateway_probe_failures_total',
    help: 'Failed /health or /v1/info probes.',
    labelNames: ['backend', 'replica'] as const,
    registers: [this.registry],
  });
  readonly fallbacks = new Counter({
    name: 'magma_gateway_fallbacks_total',
    help: 'Inputs moved to a fallback backend after a failure.',
    labelNames: ['route', 'from', 'to'] as const,
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'magma_gateway_retries_total',
    help: 'Sub-requests retried on another replica of the same backend after a connect failure.',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  readonly retryBudgetExhausted = new Counter({
    name: 'magma_gateway_retry_budget_exhausted_total',
    help: 'Retries or fallbacks refused because the retry budget was spent.',
    labelNames: ['backend'] as const,
    registers: [this.registry],
  });
  readonly overhead = new Histogram({
    name: 'magma_gateway_overhead_seconds',
    help: 'Time spent in the gateway itself per batch (parsing, validation, planning, assembly), excluding waiting on backends.',
    buckets: OVERHEAD_BUCKETS,
    registers: [this.registry],
  });
  readonly shadowRequests = new Counter({
    name: 'magma_gateway_shadow_requests_total',
    help: 'Shadow copies sent, by outcome (ok, failed, invalid, dropped).',
    labelNames: ['route', 'backend', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly shadowAgreement = new Counter({
    name: 'magma_gateway_shadow_agreement_total',
    help: 'Shadow decisions compared with the primary\'s (same tool calls and say).',
    labelNames: ['route', 'backend', 'agreed'] as const,
    registers: [this.registry],
  });
  readonly executionFeedback = new Counter({
    name: 'magma_gateway_execution_feedback_total',
    help: 'Environment feedback attributed to the backend whose decision it reports on.',
    labelNames: ['route', 'backend', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly replay = new Counter({
    name: 'magma_gateway_replay_total',
    help: 'Idempotent replay lookups: hit, miss, waited, too_large.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly replayConflicts = new Counter({
    name: 'magma_gateway_replay_conflicts_total',
    help: 'A request_id seen again with a different body (computed normally).',
    registers: [this.registry],
  });
  readonly storeUp = new Gauge({
    name: 'magma_gateway_store_up',
    help: '1 while the shared state store (Redis) is reachable, or for the in-memory store.',
    registers: [this.registry],
  });
  readonly reloads = new Counter({
    name: 'magma_gateway_config_reloads_total',
    help: 'Config reloads, by result (ok, refused).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.storeUp.set(1);
  }

  /** The code label for a backend's error code: the first MAX_CODES_PER_BACKEND distinct codes, then `other`. */
  codeLabel(backend: string, code: string): string {
    let seen = this.codes.get(backend);
    if (seen === undefined) {
      seen = new Set();
      this.codes.set(backend, seen);
    }
    if (seen.has(code)) return code;
    if (seen.size >= MAX_CODES_PER_BACKEND) return 'other';
    seen.add(code);
    return code;
  }
}
