/**
 * The `batch` log line and the ids every batch log line carries (docs/limits-and-edges.md#logs). The client's
 * `request_id` is bounded by nothing: a line holds its first REQUEST_ID_LOG_CHARS characters.
 */
import type { Logger } from '../logging.js';
import type { CorrelationHeaders } from '../protocol/correlation.js';
import type { BatchSummary } from './activity.js';

const REQUEST_ID_LOG_CHARS = 256;

export interface BatchLogIds {
  request_id: string;
  /** In UTF-16 code units, when it was cut. */
  request_id_chars?: number;
  x_request_id: string;
  trace_id: string;
}

export function batchLogIds(requestId: string, headers: CorrelationHeaders, spanTraceparent: string | undefined): BatchLogIds {
  const cut = requestId.length > REQUEST_ID_LOG_CHARS;
  return {
    request_id: cut ? `${requestId.slice(0, REQUEST_ID_LOG_CHARS)}...` : requestId,
    ...(cut ? { request_id_chars: requestId.length } : {}),
    x_request_id: headers['x-request-id'],
    // The trace id of a W3C traceparent, `00-<32 hex>-<16 hex>-<2 hex>`.
    trace_id: (spanTraceparent ?? headers.traceparent).slice(3, 35),
  };
}

interface LineExtras {
  clientWaitMs: number | undefined;
  bodyBytes: number;
  cacheHits: number | undefined;
  streamed: boolean;
}

export function batchLogLine(ids: BatchLogIds, r: Omit<BatchSummary, 'at' | 'seq'>, x: LineExtras): Record<string, unknown> {
  const line: Record<string, unknown> = {};
  return Object.assign(line, ids, {
    agent: r.agent,
    ...(r.client === null ? {} : { client: r.client }),
    ...(x.clientWaitMs === undefined || x.clientWaitMs === 0 ? {} : { client_wait_ms: Math.round(x.clientWaitMs) }),
    inputs: r.inputs,
    candidates: r.candidates,
    ...(x.streamed ? { streamed: true } : {}),
    routes: r.routes,
    backends: r.backends,
    error_codes: r.error_codes,
    // The line keeps its whole milliseconds and overhead to 0.01 ms, as before the console's record was finer.
    duration_ms: Math.round(r.duration_ms),
    overhead_ms: Math.round(r.overhead_ms * 100) / 100,
    body_bytes: x.bodyBytes,
    ...(x.cacheHits === undefined ? {} : { cache_hits: x.cacheHits }),
  });
}

/** pino's isLevelEnabled, which the Logger interface does not declare. */
export function logsInfo(log: Logger): boolean {
  return log.level === 'info' || log.level === 'debug' || log.level === 'trace';
}
