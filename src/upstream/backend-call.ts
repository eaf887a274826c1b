/**
 * One HTTP call to a backend replica with explicit timeouts, its outcome classified into the gateway's error
 * codes (DESIGN.md §5). Nothing here throws: a failed call is a value the dispatcher can route on.
 */
import { errors } from 'undici';
import { codeForStatus, type AttemptFailure } from '../errors.js';
import type { Replica } from './replica.js';

export type CallResult =
  | { ok: true; status: number; text: string; bytes?: Buffer; contentType?: string }
  | { ok: false; failure: AttemptFailure };

export interface CallOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Aborts the call (client went away, deadline); reported as a timeout. */
  signal?: AbortSignal;
  /** Keep the answer's bytes and content type undecoded (passed back unchanged: coaching), `text` stays empty. */
  raw?: boolean;
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function classifyError(err: unknown, timedOut: boolean, timeoutMs: number): AttemptFailure {
  if (timedOut) return { code: 'gateway_backend_timeout', message: `no answer within ${Math.round(timeoutMs)} ms` };
  const code = errorCode(err);
  const msg = err instanceof Error ? err.message : String(err);
  if (code !== undefined && CONNECT_CODES.has(code)) {
    return { code: 'gateway_backend_unreachable', message: `cannot connect: ${code}`, notSent: true };
  }
  if (err instanceof errors.RequestAbortedError) return { code: 'gateway_backend_timeout', message: 'aborted' };
  return { code: 'gateway_backend_unreachable', message: `connection failed: ${code ?? msg}` };
}

/**
 * Raw call: any HTTP status comes back as ok:true with its text; only transport failures are failures.
 * The timeout is undici's own (headers, then each body chunk): no AbortController or timer per call on the hot
 * path. The caller's signal (client gone, batch deadline) bounds the whole call.
 */
export async function callReplica(replica: Replica, opts: CallOptions): Promise<CallResult> {
  const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
  try {
    const res = await replica.pool.request({
      method: opts.method,
      path: replica.path(opts.path),
      headers: { ...replica.headers, ...opts.headers },
      body: opts.body,
      signal: opts.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    if (opts.raw === true) {
      const bytes = Buffer.from(await res.body.arrayBuffer());
      const ct = res.headers['content-type'];
      return { ok: true, status: res.statusCode, text: '', bytes, contentType: Array.isArray(ct) ? ct[0] : ct };
    }
    const text = await res.body.text();
    return { ok: true, status: res.statusCode, text };
  } catch (err) {
    const timedOut =
      err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError || opts.signal?.aborted === true;
    return { ok: false, failure: classifyError(err, timedOut, opts.timeoutMs) };
  }
}

/** A POST /v1/responses call: non-2xx statuses become failures with their DESIGN §5 codes. */
export async function postResponses(
  replica: Replica,
  body: string | Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<CallResult> {
  const r = await callReplica(replica, {
    method: 'POST',
    path: '/v1/responses',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    timeoutMs,
    signal,
  });
  if (!r.ok || (r.status >= 200 && r.status < 300)) return r;
  return {
    ok: false,
    failure: { code: codeForStatus(r.status), message: `HTTP ${r.status}: ${r.text.slice(0, 200)}` },
  };
}
