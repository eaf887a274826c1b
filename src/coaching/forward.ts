/** One coaching call to a backend replica, its answer passed back unchanged. Never throws. */
import type { IncomingHttpHeaders } from 'node:http';
import type { AbortLike } from '../abort.js';
import { endAttemptSpan, replicaCallAttributes } from '../dispatch/attempt-span.js';
import { correlationHeaders, withTraceparent } from '../protocol/correlation.js';
import { isJsonObject, parseJsonOrUndefined } from '../protocol/schemas.js';
import { NOOP_SPAN, type TraceSpan } from '../tracing/trace-span.js';
import { callReplica } from '../upstream/call-replica.js';
import type { AnswerCharge } from '../upstream/call-types.js';
import type { Replica } from '../upstream/replica.js';
import { coachingOutcome } from './coaching-span.js';

type ForwardResult =
  | { ok: true; status: number; contentType: string | undefined; body: Buffer }
  | { ok: false; status: 502 | 504; message: string };

interface ForwardOptions {
  method: 'PUT' | 'DELETE' | 'POST';
  path: string;
  body?: string;
  headers: Record<string, string>;
  /** The backend's timeout_s: coaching calls can run a model. */
  timeoutMs: number;
  signal: AbortLike;
  memory?: AnswerCharge;
}

export async function forward(replica: Replica, opts: ForwardOptions, parent: TraceSpan = NOOP_SPAN): Promise<ForwardResult> {
  const span = parent.recording
    ? parent.client(`${opts.method} ${replica.backend}`, replicaCallAttributes(replica, opts.method, opts.path))
    : undefined;
  const r = await callReplica(replica, { ...opts, headers: withTraceparent(opts.headers, (span ?? parent).traceparent), raw: true });
  const failure = r.ok ? undefined : r.failure;
  if (span !== undefined) endAttemptSpan(span, coachingOutcome(r.status, failure?.code), r.status, failure?.message);
  if (!r.ok) {
    return { ok: false, status: r.failure.code === 'gateway_backend_timeout' ? 504 : 502, message: r.failure.message };
  }
  return { ok: true, status: r.status, contentType: r.contentType, body: r.bytes === undefined ? Buffer.alloc(0) : r.bytes };
}

/** Its JSON `detail` when it is a string, else the text's start. */
export function answerDetail(r: ForwardResult): string {
  if (!r.ok) return r.message;
  if (r.body.length === 0) return `HTTP ${r.status}`;
  const text = r.body.toString('utf8', 0, Math.min(r.body.length, 64 * 1024));
  const parsed = parseJsonOrUndefined(text);
  return isJsonObject(parsed) && typeof parsed.detail === 'string' ? parsed.detail.slice(0, 200) : text.slice(0, 200);
}

export function coachingHeaders(headers: IncomingHttpHeaders, withBody: boolean): Record<string, string> & { 'x-request-id': string } {
  const h: Record<string, string> & { 'x-request-id': string } = { ...correlationHeaders(headers) };
  if (withBody) {
    const ct = headers['content-type'];
    h['content-type'] = typeof ct === 'string' && ct.length > 0 ? ct : 'application/json';
  }
  return h;
}
