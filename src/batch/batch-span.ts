/** The server span of a batch (docs/operations.md#tracing); called only when the span is recorded. */
import { GatewayError } from '../errors.js';
import type { CorrelationHeaders } from '../protocol/correlation.js';
import type { AgentRequest } from '../protocol/types.js';
import { candidateCount } from '../protocol/request-limits.js';
import type { BatchResult } from '../dispatch/batch.js';
import type { BatchPlan } from '../routing/plan.js';
import {
  ATTR_BACKENDS,
  ATTR_CACHE_HITS,
  ATTR_CANDIDATES,
  ATTR_ERROR_CANDIDATES,
  ATTR_ERROR_CODES,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_INPUTS,
  ATTR_OVERHEAD_MS,
  ATTR_REPLAY,
  ATTR_REQUEST_ID,
  ATTR_ROUTES,
  ATTR_X_REQUEST_ID,
  MAX_LISTED,
} from '../tracing/attributes.js';
import type { SpanAttributes, TraceSpan } from '../tracing/trace-span.js';

export const BATCH_SPAN_NAME = 'POST /v1/responses';

/** Given when the span starts; one constant, so an untraced batch allocates nothing for it. */
export const BATCH_SPAN_ATTRIBUTES: SpanAttributes = Object.freeze({
  [ATTR_HTTP_REQUEST_METHOD]: 'POST',
  [ATTR_HTTP_ROUTE]: '/v1/responses',
});

export function traceRequest(span: TraceSpan, request: AgentRequest, correlation: CorrelationHeaders): void {
  span.set({
    [ATTR_REQUEST_ID]: request.request_id,
    [ATTR_X_REQUEST_ID]: [correlation['x-request-id']],
    [ATTR_INPUTS]: request.inputs.length,
    [ATTR_CANDIDATES]: candidateCount(request.inputs),
  });
}

export function traceResult(span: TraceSpan, plan: BatchPlan, result: BatchResult, overheadMs: number): void {
  const routes: string[] = [];
  for (const p of plan.inputs) if (!routes.includes(p.route) && routes.length < MAX_LISTED) routes.push(p.route);
  let errors = 0;
  for (const code in result.errorCodes) errors += result.errorCodes[code] ?? 0;
  span.set({
    [ATTR_ROUTES]: routes,
    [ATTR_BACKENDS]: Object.keys(result.backends),
    [ATTR_ERROR_CANDIDATES]: errors,
    [ATTR_ERROR_CODES]: Object.keys(result.errorCodes).slice(0, MAX_LISTED),
    [ATTR_OVERHEAD_MS]: Math.round(overheadMs * 100) / 100,
    [ATTR_CACHE_HITS]: result.cached?.size,
  });
}

export function traceAnswer(span: TraceSpan, status: number, replayHit: boolean | undefined): void {
  span.set({ [ATTR_HTTP_RESPONSE_STATUS_CODE]: status, [ATTR_REPLAY]: replayHit === true ? 'hit' : undefined });
  if (status === 422) span.set({ [ATTR_ERROR_TYPE]: 'GATEWAY_ERR_INVALID_REQUEST' });
}

/** A batch that threw is answered 500 by the front (an internal invariant broke). */
export function traceThrown(span: TraceSpan, err: unknown): void {
  span.set({ [ATTR_HTTP_RESPONSE_STATUS_CODE]: 500 });
  span.fail(err instanceof GatewayError ? err.code : 'GATEWAY_ERR_INTERNAL', err instanceof Error ? err.message : String(err));
}
