/**
 * What a batch reports while it runs, as events; one implementation maps them to the Prometheus series (README
 * "Metrics"), so a batch never names a metric and a test can watch a batch without a registry.
 */
import type { GatewayMetrics } from '../metrics.js';

/** How a sub-request ended: `ok`, `cancelled` (the client went away), or a gateway_* failure code. */
export type AttemptOutcome = 'ok' | 'cancelled' | string;

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
    this.metrics.inputs.inc({ agent: this.agent, route, backend });
  }

  attemptEnded(backend: string, outcome: AttemptOutcome, ms?: number): void {
    if (ms !== undefined) this.metrics.backendDuration.observe({ backend }, ms / 1000);
    this.metrics.backendRequests.inc({ backend, outcome });
  }

  candidatesFilled(route: string, backend: string, status: string, n: number): void {
    this.metrics.candidates.inc({ agent: this.agent, route, backend, status }, n);
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
