/** The spans of coaching calls (docs/operations.md#tracing); attributes are built only for recorded spans. */
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

/** Built once. */
export const COACHING_SPANS = {
  coach: start('POST', '/v1/coaching'),
  PUT: start('PUT', '/v1/coaching/sessions/:run_id'),
  DELETE: start('DELETE', '/v1/coaching/sessions/:run_id'),
} as const;

/** As OpenTelemetry's HTTP server spans: a 4xx is the client's mistake, not the gateway's failure. */
export function traceCoachingStatus(span: TraceSpan, status: number): void {
  span.set({ [ATTR_HTTP_RESPONSE_STATUS_CODE]: status });
  if (status >= 500) span.fail(String(status));
  else if (status >= 400) span.set({ [ATTR_ERROR_TYPE]: String(status) });
}

/** As a sub-request's (dispatch/attempt-span.ts): `ok`, else a candidate error code. */
export function coachingOutcome(status: number | undefined, failureCode: string | undefined): string {
  if (failureCode !== undefined) return failureCode;
  return status !== undefined && status >= 200 && status < 300 ? 'ok' : codeForStatus(status ?? 502);
}
