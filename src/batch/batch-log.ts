/**
 * The record of a finished batch and its log line, built in one place for every answer's shape; and the
 * identifying fields every batch log line carries (docs/limits-and-edges.md#logs): the body's
 * `request_id`, bounded, the `x-request-id` every backend call of the batch carries and the trace id, so
 * one line leads to the backends' logs and to the trace.
 *
 * The `request_id` is the client's and may be megabytes long (the contract bounds it by nothing): a log line
 * holds its first REQUEST_ID_LOG_CHARS characters and, when it was cut, its full length.
 */
import type { BatchResult } from '../dispatch/batch-types.js';
import type { Logger } from '../logging.js';
import type { CorrelationHeaders } from '../protocol/correlation.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { BatchPlan } from '../routing/plan.js';
import type { BatchSummary } from './activity.js';
import { consoleRecord } from './batch-record.js';

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

/** What a finished batch's record is made from (batch-cycle.ts's finish), whatever the answer's shape. */
export interface FinishedBatch {
  request: IndexedAgentRequest;
  agent: string;
  client: string | undefined;
  plan: BatchPlan;
  result: BatchResult;
  durationMs: number;
  overheadMs: number;
  /** Inputs the response cache answered; undefined without a cache. */
  cacheHits: number | undefined;
  /** Inputs kept with their own row in the console (`admin.batch_inputs_kept`). */
  inputsKept: number;
}

/**
 * The one record of a finished batch: what the console's recent batches keep (batch/activity.ts, built by
 * batch-record.ts: ids, names, counts and codes, never memory or prompts) and what the `batch` log line says.
 */
export function batchRecord(f: FinishedBatch): Omit<BatchSummary, 'at' | 'seq'> {
  return consoleRecord({ ...f, client: f.client ?? null });
}

/** What the log line says beyond the record. */
export interface LineExtras {
  /** Time the batch waited for its client's limits; left out when it did not wait. */
  clientWaitMs: number | undefined;
  bodyBytes: number;
  /** Inputs the response cache answered; left out without a cache. */
  cacheHits: number | undefined;
  streamed: boolean;
}

/** The `batch` log line (docs/operations.md#logs): the ids, then the record (its request_id bounded, client when known). */
export function batchLogLine(ids: BatchLogIds, r: Omit<BatchSummary, 'at' | 'seq'>, x: LineExtras): Record<string, unknown> {
  return {
    ...ids,
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
  };
}

/** Whether `log` writes info lines (pino's isLevelEnabled, which the Logger interface does not declare). */
export function logsInfo(log: Logger): boolean {
  return log.level === 'info' || log.level === 'debug' || log.level === 'trace';
}
