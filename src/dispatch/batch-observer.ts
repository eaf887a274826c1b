/**
 * What a batch reports while it runs, as events; one implementation maps them to the Prometheus series (docs/operations.md#metrics),
 * so a batch never names a metric and a test can watch a batch without a registry. A traced batch
 * (docs/operations.md#tracing) also writes its fallbacks and retries as events of its server span.
 */
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

export interface BatchObserver {
  /** A leg of an input was routed to `backend` by its route (once per leg, before anything is sent). */
  legRouted(route: string, backend: string): void;
  /** A sub-request ended. `ms`: its wall time on the wire; undefined when it never reached the wire (no permit). */
  attemptEnded(backend: string, outcome: AttemptOutcome, ms?: number): void;
  /** `n` candidates of `route` filled with `status`, as produced (or failed) by `backend`. */
  candidatesFilled(route: string, backend: string, status: string, n: number): void;
  /** `n` error candidates the gateway made with its own code. */
  gatewayErrors(backend: string, code: string, n: number): void;
  /** One error candidate a backend returned, with the backend's code. */
  backendError(backend: string, code: string): void;
  /** An item moved from its failed backend to a fallback. */
  fallback(route: string, from: string, to: string): void;
  /** A sub-request sent to another replica of the same backend after a refused connection. */
  replicaRetry(backend: string): void;
  /** A fallback to `backend` refused because the retry budget was spent. */
  budgetExhausted(backend: string): void;
}

/** The batch's events as the gateway's Prometheus series, labelled with the agent the batch was sent to. */
export class MetricsBatchObserver implements BatchObserver {
  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly agent: string,
  ) {}

  legRouted(route: string, backend: string): void {
    this.metrics.countInput(this.agent, route, backend);
  }

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

/**
 * The metrics observer plus span events for what moved inputs: fallbacks, retries on another replica, retries
 * the budget refused. One event per item moved; the span keeps the first 128 events (src/tracing/otel-tracing.ts).
 */
class SpanEventsObserver implements BatchObserver {
  constructor(
    private readonly inner: BatchObserver,
    private readonly span: TraceSpan,
  ) {}

  legRouted(route: string, backend: string): void {
    this.inner.legRouted(route, backend);
  }

  attemptEnded(backend: string, outcome: AttemptOutcome, ms?: number): void {
    this.inner.attemptEnded(backend, outcome, ms);
  }

  candidatesFilled(route: string, backend: string, status: string, n: number): void {
    this.inner.candidatesFilled(route, backend, status, n);
  }

  gatewayErrors(backend: string, code: string, n: number): void {
    this.inner.gatewayErrors(backend, code, n);
  }

  backendError(backend: string, code: string): void {
    this.inner.backendError(backend, code);
  }

  fallback(route: string, from: string, to: string): void {
    this.inner.fallback(route, from, to);
    this.span.event(EVENT_FALLBACK, { [ATTR_ROUTE]: route, [ATTR_FROM]: from, [ATTR_TO]: to });
  }

  replicaRetry(backend: string): void {
    this.inner.replicaRetry(backend);
    this.span.event(EVENT_REPLICA_RETRY, { [ATTR_BACKEND]: backend });
  }

  budgetExhausted(backend: string): void {
    this.inner.budgetExhausted(backend);
    this.span.event(EVENT_BUDGET_EXHAUSTED, { [ATTR_BACKEND]: backend });
  }
}

/** The observer of a batch: its Prometheus series, and its span's events when the span is recorded. */
export function batchObserver(metrics: GatewayMetrics, agent: string, span: TraceSpan | undefined): BatchObserver {
  const m = new MetricsBatchObserver(metrics, agent);
  return span?.recording === true ? new SpanEventsObserver(m, span) : m;
}
