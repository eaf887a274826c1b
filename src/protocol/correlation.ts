/** `x-request-id` and `traceparent`, the same on every call a client request causes (docs/operations.md#logs). */
import { randomFillSync, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

// A type, not an interface: it must pass where a Record<string, string> of headers is expected.
export type CorrelationHeaders = {
  'x-request-id': string;
  traceparent: string;
};

/** Visible ASCII; longer ids are replaced: they end up in every backend's logs. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Version (not ff), trace id and parent id (neither all zeros), flags: https://www.w3.org/TR/trace-context/ */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** Checked first so the regex only ever sees 55 characters. */
const TRACEPARENT_CHARS = 55;

export function isValidRequestId(v: unknown): v is string {
  return typeof v === 'string' && REQUEST_ID.test(v);
}

export function isValidTraceparent(v: unknown): v is string {
  return typeof v === 'string' && v.length === TRACEPARENT_CHARS && TRACEPARENT.test(v);
}

export function correlationHeaders(headers: IncomingHttpHeaders): CorrelationHeaders {
  const rid = headers['x-request-id'];
  const tp = headers['traceparent'];
  return {
    'x-request-id': isValidRequestId(rid) ? rid : randomUUID(),
    traceparent: isValidTraceparent(tp) ? tp : newTraceparent(),
  };
}

/** The same object when tracing is off. */
export function withTraceparent<H extends Record<string, string>>(headers: H, traceparent: string | undefined): H {
  return traceparent === undefined ? headers : Object.assign({}, headers, { traceparent });
}

/** One small string per batch instead of two UUIDs, two replaces and a slice (about 2 KB of garbage). */
const TRACE_POOL = Buffer.alloc(4096);
let tracePoolAt = TRACE_POOL.length;

function newTraceparent(): string {
  if (tracePoolAt + 24 > TRACE_POOL.length) {
    randomFillSync(TRACE_POOL);
    tracePoolAt = 0;
  }
  // 16 bytes of trace id then 8 of parent id; neither can be all zeros except with probability 2^-64.
  const hex = TRACE_POOL.toString('hex', tracePoolAt, tracePoolAt + 24);
  tracePoolAt += 24;
  return `00-${hex.slice(0, 32)}-${hex.slice(32)}-01`;
}
