/**
 * One HTTP call to a backend replica with explicit timeouts, its outcome classified into the gateway's error
 * codes (docs/gateway-behaviour.md, "Failures and error codes"). Nothing here throws: a failed call is a value the
 * dispatcher can route on.
 */
import { StringDecoder } from 'node:string_decoder';
import { errors } from 'undici';
import type { AbortLike } from '../abort.js';
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
  signal?: AbortLike;
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
 *
 * Why a dispatch handler and not `pool.request()`: request() wraps every answer in a Readable stream and
 * parses its headers into an object, and listens on an AbortSignal; here the answer is collected straight into
 * bytes, only content-type is read (raw mode), and a cancel just calls undici's own abort (S1,
 * docs/gateway-behaviour.md "Performance targets").
 */
export function callReplica(replica: Replica, opts: CallOptions): Promise<CallResult> {
  const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
  return new Promise<CallResult>((resolve) => {
    const handler = new CollectHandler(opts, resolve);
    if (handler.settled) return;
    replica.pool.dispatch(
      {
        method: opts.method,
        path: replica.path(opts.path),
        headers: opts.headers === undefined ? replica.headers : { ...replica.headers, ...opts.headers },
        body: opts.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      handler,
    );
  });
}

const UTF8_BOM = 0xfeff;

/** undici's handler interface (onConnect, onHeaders, onData, onComplete, onError): collects one answer. */
class CollectHandler {
  settled = false;
  private abortFn: ((err: Error) => void) | undefined;
  private status = 0;
  private contentType: string | undefined;
  /** Raw mode: every chunk. Text mode: the first chunk, until a second one arrives. */
  private readonly chunks: Buffer[] = [];
  /** Text mode, answers of more than one chunk: decoded as they arrive (see onData). */
  private decoder: StringDecoder | undefined;
  private text = '';
  private readonly onSignal: (() => void) | undefined;

  constructor(
    private readonly opts: CallOptions,
    private readonly resolve: (r: CallResult) => void,
  ) {
    const { signal } = opts;
    if (signal === undefined) return;
    const aborted: CallResult = { ok: false, failure: classifyError(undefined, true, opts.timeoutMs) };
    if (signal.aborted) {
      this.settle(aborted);
      return;
    }
    this.onSignal = (): void => {
      // Queued calls have no abort function yet: the call is answered now and aborted once undici starts it.
      this.abortFn?.(new errors.RequestAbortedError());
      this.settle(aborted);
    };
    signal.addEventListener('abort', this.onSignal, { once: true });
  }

  onConnect(abort: (err: Error) => void): void {
    if (this.settled) abort(new errors.RequestAbortedError());
    else this.abortFn = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: informational, the real answer follows
    this.status = statusCode;
    if (this.opts.raw === true) {
      for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
        if (rawHeaders[i]!.toString('latin1').toLowerCase() === 'content-type') {
          this.contentType = rawHeaders[i + 1]!.toString('latin1');
          break;
        }
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.opts.raw === true || (this.chunks.length === 0 && this.decoder === undefined)) {
      this.chunks.push(chunk);
      return true;
    }
    // A multi-chunk answer (S2: megabytes) is decoded chunk by chunk rather than joined into one Buffer and
    // decoded at the end: one large allocation fewer per answer, and each chunk can be freed at once.
    if (this.decoder === undefined) {
      this.decoder = new StringDecoder('utf8');
      this.text = this.decoder.write(this.chunks.pop()!);
    }
    this.text += this.decoder.write(chunk);
    return true;
  }

  onComplete(): void {
    if (this.opts.raw === true) {
      const bytes = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.settle({ ok: true, status: this.status, text: '', bytes, contentType: this.contentType });
      return;
    }
    // Decoded like undici's body.text(): UTF-8, a leading byte order mark dropped.
    let text = this.decoder !== undefined ? this.text + this.decoder.end() : (this.chunks[0]?.toString('utf8') ?? '');
    if (text.charCodeAt(0) === UTF8_BOM) text = text.slice(1);
    this.settle({ ok: true, status: this.status, text });
  }

  onError(err: Error): void {
    const timedOut =
      err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError || this.opts.signal?.aborted === true;
    this.settle({ ok: false, failure: classifyError(err, timedOut, this.opts.timeoutMs) });
  }

  private settle(r: CallResult): void {
    if (this.settled) return;
    this.settled = true;
    if (this.onSignal !== undefined) this.opts.signal?.removeEventListener('abort', this.onSignal);
    this.resolve(r);
  }
}

/**
 * A POST /v1/responses call: non-2xx statuses become failures with their codes (docs/gateway-behaviour.md, "Failures
 * and error codes").
 */
export async function postResponses(
  replica: Replica,
  body: string | Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
  signal?: AbortLike,
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
