/**
 * One HTTP call to a backend replica, bounded in time and bytes, its outcome classified into the gateway's error
 * codes (docs/errors.md#candidate-error-codes). Nothing here throws: a failed call is a value the dispatcher can route on.
 */
import { StringDecoder } from 'node:string_decoder';
import { errors, type Dispatcher } from 'undici';
import type { AbortLike } from '../abort.js';
import { BodyBytes } from '../protocol/body-bytes.js';
import type { StoreOwner } from '../protocol/byte-store.js';
import { codeForStatus, type AttemptFailure } from '../errors.js';
import { safeReason } from '../protocol/describe.js';
import { READ_PER_TURN, ReadPauses } from './read-pauses.js';
import { postReadingPastContinue, type ContinueResult } from './read-past-continue.js';
import type { Replica } from './replica.js';

type CallResult =
  /**
   * `bytes`: a raw answer as received (one that came without a length as its chunks, which the reader thread
   * joins when it is large). `streamed`: the body went to the options' stream tap as it arrived; `bytes` and
   * `text` are then empty.
   */
  | { ok: true; status: number; text: string; bytes?: Buffer; contentType?: string; streamed?: boolean }
  /**
   * `status`: the HTTP status when the backend answered (a non-2xx, or a 2xx refused by a bound).
   * `unaskedContinue`: the answer began with `100 Continue`, which undici ends the connection on (see classifyError).
   */
  | { ok: false; failure: AttemptFailure; status?: number; unaskedContinue?: boolean };

interface CallOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Bounds the whole attempt: connect, headers and every byte of the body. */
  timeoutMs: number;
  /** The config key of timeoutMs, named in the failure message; default `timeout_s`. */
  timeoutKey?: string;
  /** Aborts the call (client went away, deadline); reported as a timeout. */
  signal?: AbortLike;
  /** Keep the answer's bytes and content type undecoded (passed back unchanged: coaching), `text` stays empty. */
  raw?: boolean;
  /**
   * Bytes of the answer kept; one byte more aborts the call at once (nothing more is buffered) as
   * gateway_backend_invalid_response. Default: the replica's backends.<name>.max_response_mb.
   */
  maxBytes?: number;
  /** The config key of maxBytes, named in the failure message; default `backends.<name>.max_response_mb`. */
  maxBytesKey?: string;
  /**
   * Raw mode: a 2xx answer longer than `overBytes` (its declared length, else the bytes received so far) goes to
   * `tap` as it arrives instead of being kept. The byte bound and the timer still hold.
   */
  stream?: { overBytes: number; tap: BodyTap };
  /** Raw mode: the answer's bytes are counted here as they arrive, its read paused while there is no room. */
  memory?: AnswerCharge;
}

/**
 * The memory budget's count of one answer (memory/budget.ts, docs/memory-budget.md), as the call sees it.
 * `charge` false: pause the read until `whenRoom` calls back (a shed shadow's charge aborts the call instead).
 */
export interface AnswerCharge extends StoreOwner {
  charge(bytes: number): boolean;
  whenRoom(fn: () => void): void;
  /** Give back `bytes` counted by charge (the answer was dropped). */
  shrink(bytes: number): void;
  /** The whole budget: an answer larger can never be held. */
  capacity(): number;
}

/** Where a streamed answer's bytes go, chunk by chunk, in order. */
export interface BodyTap {
  /** The answer is streamed from now on; `flow` paces or ends the backend's read. */
  start(flow: BodyFlow): void;
  data(chunk: Buffer): void;
}

/** A streamed answer's read: paused while its reader cannot take more, or ended with a failure. */
export interface BodyFlow {
  pause(): void;
  resume(): void;
  fail(failure: AttemptFailure): void;
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  // undici errors carry `code` and `cause` without declaring them on every class: read where present.
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const code = 'code' in e ? e.code : undefined;
    if (typeof code === 'string') return code;
    e = 'cause' in e ? e.cause : undefined;
  }
  return undefined;
}

function timeoutFailure(timeoutMs: number, key: string): AttemptFailure {
  return { code: 'gateway_backend_timeout', message: `no complete answer within ${Math.round(timeoutMs)} ms (${key})` };
}

/** undici's error for an answer that began with an unasked `100 Continue` (docs/limits-and-edges.md#1xx-answers-from-backends). */
function isUnaskedContinue(err: unknown): boolean {
  return err instanceof errors.SocketError && err.message === 'bad response';
}

function classifyError(err: unknown, timedOut: boolean, timeoutMs: number, timeoutKey = 'timeout_s'): AttemptFailure {
  if (timedOut) return timeoutFailure(timeoutMs, timeoutKey);
  const code = errorCode(err);
  const msg = err instanceof Error ? err.message : String(err);
  if (code !== undefined && CONNECT_CODES.has(code)) {
    return { code: 'gateway_backend_unreachable', message: `cannot connect: ${code}`, notSent: true };
  }
  if (err instanceof errors.RequestAbortedError) return { code: 'gateway_backend_timeout', message: 'aborted' };
  // undici 7 (client-h1.js) ends the connection with this SocketError when an answer starts with `100 Continue`
  // (the gateway never sends `Expect`) or bytes arrive with no request running; no option skips it. The backend
  // connected and answered, wrongly: an invalid answer, not an unreachable backend
  // (docs/limits-and-edges.md#1xx-answers-from-backends).
  if (isUnaskedContinue(err)) {
    return { code: 'gateway_backend_invalid_response', message: 'the answer began with 100 Continue (unasked) or bytes came with no request running' };
  }
  return { code: 'gateway_backend_unreachable', message: safeReason(`connection failed: ${code ?? msg}`) };
}

/**
 * Raw call: any HTTP status comes back as ok:true with its text; only transport failures and the bounds are
 * failures. One timer per call bounds the whole attempt (undici's own headers/body timeouts only bound the
 * silence between bytes, so a backend trickling one byte a second would never trip them); the caller's signal
 * (client gone, batch deadline) can end it sooner.
 *
 * Why a dispatch handler and not `pool.request()`: request() wraps every answer in a Readable stream and
 * listens on an AbortSignal; here the answer is collected straight into bytes and a cancel just calls the
 * dispatch controller's abort.
 */
export function callReplica(replica: Replica, opts: CallOptions): Promise<CallResult> {
  const timeoutMs = Math.max(1, Math.floor(opts.timeoutMs));
  return new Promise<CallResult>((resolve) => {
    const handler = new CollectHandler(replica, opts, timeoutMs, resolve);
    if (handler.settled) return;
    replica.pool.dispatch(
      {
        method: opts.method,
        path: replica.path(opts.path),
        headers: opts.headers === undefined ? replica.headers : { ...replica.headers, ...opts.headers },
        body: opts.body,
        // Also undici's idle timeouts: a silent backend is noticed by undici itself too.
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      },
      handler,
    );
  });
}

/**
 * The handler's abort listener, made here rather than written `this.onSignal = () => ...`: V8 allocates a
 * function literal assigned straight to a property in the old generation (it expects it to live long). This
 * one lives as long as its sub-request, and from the old generation it kept the whole call (request, answer,
 * batch) alive through every young-generation GC until the next full one: every small batch was promoted.
 */
function cancelOnAbort(h: CollectHandler): () => void {
  return () => h.cancel();
}

const UTF8_BOM = 0xfeff;

/** Bytes decoded as undici's body.text() does: UTF-8, a leading byte order mark dropped. */
function textOf(bytes: Buffer | undefined): string {
  const text = bytes === undefined ? '' : bytes.toString('utf8');
  return text.charCodeAt(0) === UTF8_BOM ? text.slice(1) : text;
}

/**
 * undici's dispatch-controller handler (onRequestStart, onResponseStart, onResponseData, onResponseEnd,
 * onResponseError; undici 7 adapts it, undici 8 calls it directly): collects one answer. The only owner of
 * the call's state; `settle` resolves once, and whatever ends the call first (answer, error, timer, signal,
 * byte bound) wins.
 */
class CollectHandler implements Dispatcher.DispatchHandler {
  settled = false;
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private contentType: string | undefined;
  private received = 0;
  /** Bytes counted on opts.memory (given back if the answer is dropped). */
  private charged = 0;
  private readonly maxBytes: number;
  /** Text mode: the first chunk, until a second one arrives. */
  private readonly chunks: Buffer[] = [];
  /** Raw mode: the answer's bytes, held once however it arrives (protocol/body-bytes.ts). */
  private body: BodyBytes | undefined;
  /** Text mode, answers of more than one chunk: decoded as they arrive (see onResponseData). */
  private decoder: StringDecoder | undefined;
  private text = '';
  private readonly onSignal: (() => void) | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  /** Set once the answer is streamed to the options' tap. */
  private tap: BodyTap | undefined;
  /** Why the read is paused now; made once the answer is READ_PER_TURN long or a pause is asked for. */
  private pauses: ReadPauses | undefined;

  constructor(
    private readonly replica: Replica,
    private readonly opts: CallOptions,
    private readonly timeoutMs: number,
    private readonly resolve: (r: CallResult) => void,
  ) {
    this.maxBytes = opts.maxBytes ?? replica.maxResponseBytes;
    const { signal } = opts;
    if (signal?.aborted === true) {
      this.settle({ ok: false, failure: { code: 'gateway_backend_timeout', message: 'cancelled before the call started' } });
      return;
    }
    this.timer = setTimeout(() => this.stop(timeoutFailure(this.timeoutMs, opts.timeoutKey ?? 'timeout_s')), timeoutMs);
    if (signal === undefined) return;
    this.onSignal = cancelOnAbort(this);
    signal.addEventListener('abort', this.onSignal, { once: true });
  }

  /** The caller's signal aborted (client gone, batch deadline). */
  cancel(): void {
    this.stop({ code: 'gateway_backend_timeout', message: 'cancelled before the answer was complete' });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Settled while queued in the pool (timer, signal): the request is dropped before a byte is sent.
    if (this.settled) controller.abort(new errors.RequestAbortedError());
    else this.controller = controller;
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.settled) return;
    if (statusCode < 200) return; // 1xx: informational, the real answer follows
    this.status = statusCode;
    const length = headers['content-length'];
    // A declared length over the bound fails before the first byte of the body is read.
    if (typeof length === 'string' && Number(length) > this.maxBytes) {
      this.tooLarge(controller);
      return;
    }
    const n = typeof length === 'string' ? Number(length) : NaN;
    const stream = this.opts.raw === true && statusCode < 300 && this.opts.stream !== undefined && n > this.opts.stream.overBytes ? this.opts.stream : undefined;
    // A streamed answer is never held whole (the tap counts what waits for the client): only one kept must fit.
    if (stream === undefined && this.opts.memory !== undefined && statusCode < 300 && n > this.opts.memory.capacity()) {
      this.cannotHold(controller, n);
      return;
    }
    if (this.opts.raw === true) {
      const ct = headers['content-type'];
      this.contentType = Array.isArray(ct) ? ct[0] : ct;
      if (stream !== undefined) {
        this.startTap(controller, stream.tap);
        return;
      }
      this.body = new BodyBytes({ declared: n, max: this.maxBytes, owner: this.opts.memory });
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.received += chunk.length;
    // Tracked from the byte that makes the answer READ_PER_TURN long: a smaller one never pauses for the turn,
    // and most answers are small, so most calls make no ReadPauses at all.
    if (this.pauses !== undefined) this.pauses.read(chunk.length);
    else if (this.received >= READ_PER_TURN) this.pausesOf(controller).read(this.received);
    if (this.received > this.maxBytes) {
      this.tooLarge(controller);
      return;
    }
    if (this.tap !== undefined) {
      this.tap.data(chunk);
      return;
    }
    const body = this.body;
    if (body !== undefined) {
      const memory = this.opts.memory;
      const stream = this.opts.stream;
      const streams = stream !== undefined && this.status < 300 && this.received > stream.overBytes;
      if (memory !== undefined && this.status < 300) {
        if (!streams && this.received > memory.capacity()) {
          this.cannotHold(controller, this.received);
          return;
        }
        this.charged += chunk.length;
        if (!memory.charge(chunk.length)) {
          if (this.settled) return; // a shed shadow: its call was aborted
          // Backpressure: undici stops reading the socket, so TCP holds the rest at the backend.
          const pauses = this.pausesOf(controller);
          pauses.pause('budget');
          memory.whenRoom(() => pauses.resume('budget'));
        }
      }
      body.add(chunk);
      // No declared length: streamed from the moment the answer proves longer than the bound.
      if (streams) {
        const held = body.received();
        this.body = undefined;
        this.startTap(controller, stream.tap);
        if (!this.settled) stream.tap.data(held);
      }
      return;
    }
    if (this.chunks.length === 0 && this.decoder === undefined) {
      this.chunks.push(chunk);
      return;
    }
    // A multi-chunk answer (megabytes) is decoded chunk by chunk rather than joined into one Buffer and
    // decoded at the end: one large allocation fewer per answer, and each chunk can be freed at once.
    if (this.decoder === undefined) {
      this.decoder = new StringDecoder('utf8');
      const first = this.chunks.pop();
      this.text = first === undefined ? '' : this.decoder.write(first);
    }
    this.text += this.decoder.write(chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    if (this.tap !== undefined) {
      this.settle({ ok: true, status: this.status, text: '', streamed: true });
      return;
    }
    if (this.opts.raw === true) {
      const bytes = this.body?.received() ?? Buffer.alloc(0);
      this.settle({ ok: true, status: this.status, text: '', bytes, contentType: this.contentType });
      return;
    }
    // Decoded like undici's body.text(): UTF-8, a leading byte order mark dropped.
    let text = this.decoder !== undefined ? this.text + this.decoder.end() : (this.chunks[0]?.toString('utf8') ?? '');
    if (text.charCodeAt(0) === UTF8_BOM) text = text.slice(1);
    this.settle({ ok: true, status: this.status, text });
  }

  /** `controller` is null when undici 8 fails a dispatch before the request started. */
  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.settled) return;
    const timedOut = err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError;
    const failure = classifyError(err, timedOut, this.timeoutMs, this.opts.timeoutKey);
    this.settle(isUnaskedContinue(err) ? { ok: false, failure, unaskedContinue: true } : { ok: false, failure });
  }

  private startTap(controller: Dispatcher.DispatchController, tap: BodyTap): void {
    this.tap = tap;
    this.controller = controller;
    tap.start({
      pause: () => this.pausesOf(controller).pause('client'),
      resume: () => this.pausesOf(controller).resume('client'),
      fail: (failure) => this.stop(failure),
    });
  }

  private pausesOf(controller: Dispatcher.DispatchController): ReadPauses {
    this.pauses ??= new ReadPauses(controller, () => !this.settled);
    return this.pauses;
  }

  /** An answer the memory budget can never hold: its candidates fail, the backend is not blamed for it. */
  private cannotHold(controller: Dispatcher.DispatchController, bytes: number): void {
    this.controller = controller;
    this.stop({
      code: 'gateway_memory_budget',
      message: `the answer (${bytes} bytes and more) cannot be held under server.memory_budget_mb (${this.opts.memory?.capacity() ?? 0} bytes)`,
    });
  }

  private tooLarge(controller: Dispatcher.DispatchController): void {
    const key = this.opts.maxBytesKey ?? `backends.${this.replica.backend}.max_response_mb`;
    this.controller = controller;
    this.stop({
      code: 'gateway_backend_invalid_response',
      message: `the answer is larger than ${this.maxBytes} bytes (${key})`,
    });
  }

  /** End the call now with `failure`: answered first, then undici is told to drop the connection's request. */
  private stop(failure: AttemptFailure): void {
    if (this.settled) return;
    // A status already received (an answer too large or too slow after its headers) goes on the client span.
    this.settle(this.status > 0 ? { ok: false, failure, status: this.status } : { ok: false, failure });
    this.chunks.length = 0;
    this.body?.drop();
    this.body = undefined;
    this.text = '';
    if (this.charged > 0) this.opts.memory?.shrink(this.charged);
    this.charged = 0;
    this.controller?.abort(new errors.RequestAbortedError());
  }

  private settle(r: CallResult): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.onSignal !== undefined) this.opts.signal?.removeEventListener('abort', this.onSignal);
    this.resolve(r);
  }
}

/** A 2xx answer of POST /v1/responses as its bytes (empty when `streamed`: they went to the tap), or a failure. */
export type ResponsesResult =
  | { ok: true; status: number; bytes: Buffer; streamed: boolean }
  | { ok: false; failure: AttemptFailure; status?: number; unaskedContinue?: boolean };

export interface ResponsesCall {
  body: string | Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  signal?: AbortLike;
  /** A long 2xx answer is streamed to a tap (CallOptions.stream). */
  stream?: CallOptions['stream'];
  /** Where the answer's bytes are counted (CallOptions.memory). */
  memory?: AnswerCharge;
}

/**
 * A POST /v1/responses call: non-2xx statuses become failures with their codes (decoded for their message); a
 * 2xx answer stays its bytes, which the caller indexes and checks, depth included (protocol/answer/answer-check.ts).
 */
export async function postResponses(replica: Replica, c: ResponsesCall): Promise<ResponsesResult> {
  const { timeoutMs, signal } = c;
  const started = performance.now();
  const call = (ms: number): Promise<CallResult> =>
    callReplica(replica, {
      method: 'POST',
      path: '/v1/responses',
      body: c.body,
      headers: { 'content-type': 'application/json', ...c.headers },
      timeoutMs: ms,
      signal,
      raw: true,
      stream: c.stream,
      memory: c.memory,
    });
  const first = await call(timeoutMs);
  let r: CallResult | ContinueResult = first;
  // An answer that began with an unasked `100 Continue` ended its connection before its body (undici cannot
  // skip it): asked once more through node:http, which reads past it, within what is left of the time
  // (docs/limits-and-edges.md#1xx-answers-from-backends).
  if (!first.ok && first.unaskedContinue === true && signal?.aborted !== true) {
    r = await postReadingPastContinue(replica, {
      path: '/v1/responses',
      body: c.body,
      headers: { 'content-type': 'application/json', ...c.headers },
      timeoutMs: timeoutMs - (performance.now() - started),
      maxBytes: replica.maxResponseBytes,
      maxBytesKey: `backends.${replica.backend}.max_response_mb`,
      timeoutKey: 'timeout_s',
      signal,
    });
  }
  if (!r.ok) return r;
  if (r.status >= 200 && r.status < 300) return { ok: true, status: r.status, bytes: r.bytes ?? Buffer.alloc(0), streamed: 'streamed' in r && r.streamed === true };
  const text = textOf(r.bytes);
  return {
    ok: false,
    status: r.status,
    failure: { code: codeForStatus(r.status), message: safeReason(`HTTP ${r.status}: ${text.slice(0, 200)}`) },
  };
}
