/** What a batch reports while it runs, as events mapped to the Prometheus series (docs/operations.md#metrics). */
import type { GatewayMetrics } from '../metrics.js';
import {
  ATTR_BACKEND,
  ATTR_FROM,
  ATTR_ROUTE,
  ATTR_TO,
  EVENT_BUDGET_EXHAUSTED,
  EVENT_FALLBACK,
  EVENT_REPLICA_RETRY,
} from '../tracing/attributes.js';
import type { TraceSpan } from '../tracing/trace-span.js';

/** How a sub-request ended: `ok`, `cancelled` (the client went away), or a gateway_* failure code. */
type AttemptOutcome = 'ok' | 'cancelled' | string;

export class MetricsBatchObserver {
  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly agent: string,
  ) {}

  legRouted(route: string, backend: string): void {
    this.metrics.countInput(this.agent, route, backend);
  }

  /** `ms`: its wall time on the wire; undefined when it never reached the wire (no permit). */
  attemptEnded(backend: string, outcome: AttemptOutcome, ms?: number): void {
    if (ms !== undefined) this.metrics.backendDuration.observe({ backend }, ms / 1000);
    this.metrics.countBackendRequest(backend, outcome);
  }

  candidatesFilled(route: string, backend: string, status: string, n: number): void {
    this.metrics.countCandidates(this.agent, route, backend, status, n);
  }

  gatewayErrors(backend: string, code: string, n: number): void {
    this.metrics.candidateErrors.inc({ agent: this.agent, backend, code }, n);
  }

  backendError(backend: string, code: string): void {
    // A backend's own codes are capped per backend: one inventing a code per request cannot grow the series.
    this.metrics.candidateErrors.inc({ agent: this.agent, backend, code: this.metrics.codeLabel(backend, code) });
  }

  fallback(route: string, from: string, to: string): void {
    this.metrics.fallbacks.inc({ agent: this.agent, route, from, to });
  }

  replicaRetry(backend: string): void {
    this.metrics.retries.inc({ backend });
  }

  budgetExhausted(backend: string): void {
    this.metrics.retryBudgetExhausted.inc({ backend });
  }
}

/** The metrics plus one span event per item moved. */
class SpanEventsObserver extends MetricsBatchObserver {
  constructor(
    metrics: GatewayMetrics,
    agent: string,
    private readonly span: TraceSpan,
  ) {
    super(metrics, agent);
  }

  override fallback(route: string, from: string, to: string): void {
    super.fallback(route, from, to);
    this.span.event(EVENT_FALLBACK, { [ATTR_ROUTE]: route, [ATTR_FROM]: from, [ATTR_TO]: to });
  }

  override replicaRetry(backend: string): void {
    super.replicaRetry(backend);
    this.span.event(EVENT_REPLICA_RETRY, { [ATTR_BACKEND]: backend });
  }

  override budgetExhausted(backend: string): void {
    super.budgetExhausted(backend);
    this.span.event(EVENT_BUDGET_EXHAUSTED, { [ATTR_BACKEND]: backend });
  }
}

export function batchObserver(metrics: GatewayMetrics, agent: string, span: TraceSpan | undefined): MetricsBatchObserver {
  return span?.recording === true ? new SpanEventsObserver(metrics, agent, span) : new MetricsBatchObserver(metrics, agent);
}
