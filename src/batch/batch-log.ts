/**
 * The identifying fields every batch log line carries (docs/limits-and-edges.md#logs): the body's
 * `request_id`, bounded, the `x-request-id` every backend call of the batch carries and the trace id, so
 * one line leads to the backends' logs and to the trace.
 *
 * The `request_id` is the client's and may be megabytes long (the contract bounds it by nothing): a log line
 * holds its first REQUEST_ID_LOG_CHARS characters and, when it was cut, its full length.
 */
import type { CorrelationHeaders } from '../protocol/correlation.js';

/** Characters of a `request_id` a log line holds. */
export const REQUEST_ID_LOG_CHARS = 256;

export interface BatchLogIds {
  request_id: string;
  /** Set when `request_id` was cut: the length of the whole one, in UTF-16 code units. */
  request_id_chars?: number;
  x_request_id: string;
  trace_id: string;
}

/** The trace id of a W3C traceparent (`00-<32 hex>-<16 hex>-<2 hex>`). */
function traceIdOf(traceparent: string): string {
  return traceparent.slice(3, 35);
}

/** The `request_id` as a log line holds it, with its length when it was cut. */
export function loggedRequestId(requestId: string): Pick<BatchLogIds, 'request_id' | 'request_id_chars'> {
  if (requestId.length <= REQUEST_ID_LOG_CHARS) return { request_id: requestId };
  return { request_id: `${requestId.slice(0, REQUEST_ID_LOG_CHARS)}...`, request_id_chars: requestId.length };
}

/**
 * `spanTraceparent`: the batch span's (tracing on), which names the same trace as the client's valid
 * traceparent or starts a new one; without tracing, the traceparent the backend calls carry.
 */
export function batchLogIds(requestId: string, headers: CorrelationHeaders, spanTraceparent: string | undefined): BatchLogIds {
  return {
    ...loggedRequestId(requestId),
    x_request_id: headers['x-request-id'],
    trace_id: traceIdOf(spanTraceparent ?? headers.traceparent),
  };
}
