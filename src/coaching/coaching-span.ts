/**
 * The spans of coaching calls (docs/operations.md#tracing): a server span per `POST /v1/coaching` and per session
 * `PUT`/`DELETE`, a client span per call to a backend (forward.ts, attributes from dispatch/attempt-span.ts).
 * Attributes are built only for recorded spans: callers check `span.recording`.
 */
import { codeForStatus } from '../errors.js';
import { ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from '../tracing/attributes.js';
import type { SpanAttributes, TraceSpan } from '../tracing/trace-span.js';

export interface CoachingSpanStart {
  name: string;
  attributes: SpanAttributes;
}

const start = (method: string, route: string): CoachingSpanStart => ({
  name: `${method} ${route.replace(':run_id', '{run_id}')}`,
  attributes: Object.freeze({ [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_HTTP_ROUTE]: route }),
});

/** Name and first attributes of each endpoint's server span, built once. */
export const COACHING_SPANS = {
  coach: start('POST', '/v1/coaching'),
  PUT: start('PUT', '/v1/coaching/sessions/:run_id'),
  DELETE: start('DELETE', '/v1/coaching/sessions/:run_id'),
} as const;

/**
 * The status the gateway answered. Like OpenTelemetry's HTTP server spans, a 5xx marks the span failed and a
 * 4xx only names its status in `error.type`: the client's mistake is not the gateway's failure.
 */
export function traceCoachingStatus(span: TraceSpan, status: number): void {
  span.set({ [ATTR_HTTP_RESPONSE_STATUS_CODE]: status });
  if (status >= 500) span.fail(String(status));
  else if (status >= 400) span.set({ [ATTR_ERROR_TYPE]: String(status) });
}

/**
 * A coaching call's outcome as a sub-request's (dispatch/attempt-span.ts): `ok` for a 2xx, else the candidate
 * code the status or the transport failure maps to.
 */
export function coachingOutcome(status: number | undefined, failureCode: string | undefined): string {
  if (failureCode !== undefined) return failureCode;
  return status !== undefined && status >= 200 && status < 300 ? 'ok' : codeForStatus(status ?? 502);
}
