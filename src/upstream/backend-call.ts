/** undici's dispatch handler collecting one backend call's answer (upstream/call-replica.ts) under its bounds. */
import { StringDecoder } from 'node:string_decoder';
import { errors, type Dispatcher } from 'undici';
import { BodyBytes } from '../protocol/body-bytes.js';
import type { AttemptFailure } from '../errors.js';
import { classifyError, isUnaskedContinue, timeoutFailure } from './call-failure.js';
import type { BodyTap, CallOptions, CallResult } from './call-types.js';
import { READ_PER_TURN, ReadPauses } from './read-pauses.js';
import type { Replica } from './replica.js';
import { UTF8_BOM } from './text-body.js';

/**
 * The handler's abort listener, made here rather than written `this.onSignal = () => ...`: V8 allocates a
 * function literal assigned straight to a property in the old generation (it expects it to live long). This
 * one lives as long as its sub-request, and from the old generation it kept the whole call (request, answer,
 * batch) alive through every young-generation GC until the next full one: every small batch was promoted.
 */
function cancelOnAbort(h: CollectHandler): () => void {
  return () => h.cancel();
}

/**
 * undici's dispatch-controller handler (onRequestStart, onResponseStart, onResponseData, onResponseEnd,
 * onResponseError; undici 7 adapts it, undici 8 calls it directly): collects one answer. The only owner of
 * the call's state; `settle` resolves once, and whatever ends the call first (answer, error, timer, signal,
 * byte bound) wins.
 */
export class CollectHandler implements Dispatcher.DispatchHandler {
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
