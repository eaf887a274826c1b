/**
 * undici's dispatch handler for one backend call (upstream/call-replica.ts): the outermost piece of a chain in
 * undici's handler style, each piece wrapping the next: the answer's size bound and the memory budget's charge
 * (answer-bounds.ts), then the collector (answer-collector.ts).
 */
import { errors, type Dispatcher } from 'undici';
import type { AttemptFailure } from '../errors.js';
import { BudgetCharge, SizeBound } from './answer-bounds.js';
import { AnswerCollector } from './answer-collector.js';
import { classifyError, isUnaskedContinue, timeoutFailure } from './call-failure.js';
import type { AnswerHandler, AnswerHeaders, CallOptions, CallResult, CallRun } from './call-types.js';
import { READ_PER_TURN, ReadPauses } from './read-pauses.js';
import type { Replica } from './replica.js';

/**
 * The handler's abort listener, made here rather than written `this.onSignal = () => ...`: V8 allocates a
 * function literal assigned straight to a property in the old generation (it expects it to live long). This
 * one lives as long as its sub-request, and from the old generation it kept the whole call (request, answer,
 * batch) alive through every young-generation GC until the next full one: every small batch was promoted.
 */
function cancelOnAbort(h: BackendCall): () => void {
  return () => h.cancel();
}

/**
 * undici's dispatch-controller handler (onRequestStart, onResponseStart, onResponseData, onResponseEnd,
 * onResponseError; undici 7 adapts it, undici 8 calls it directly). The pieces are plain classes, not undici's
 * DecoratorHandler: that one is deprecated in undici 7, its types declare no method a subclass could call through
 * `super`, and a piece must also let go of what it holds when the call is stopped (`drop`).
 *
 * This piece alone owns the call's state: the timer, the caller's signal, the read's pauses and the controller.
 * `settle` resolves once, and whatever ends the call first (answer, error, timer, signal, a bound) wins; once
 * settled, nothing more reaches the other pieces.
 */
export class BackendCall implements Dispatcher.DispatchHandler, CallRun {
  settled = false;
  readonly maxBytes: number;
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private received = 0;
  private readonly next: AnswerHandler;
  private readonly onSignal: (() => void) | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  /** Why the read is paused now; made once the answer is READ_PER_TURN long or a pause is asked for. */
  private pauses: ReadPauses | undefined;

  constructor(
    readonly replica: Replica,
    readonly opts: CallOptions,
    private readonly timeoutMs: number,
    private readonly resolve: (r: CallResult) => void,
  ) {
    this.maxBytes = opts.maxBytes ?? replica.maxResponseBytes;
    this.next = new SizeBound(this, new BudgetCharge(this, new AnswerCollector(this)));
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

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    if (this.settled || statusCode < 200) return; // 1xx: informational, the real answer follows
    this.status = statusCode;
    this.next.onResponseStart(controller, statusCode, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.received += chunk.length;
    // Tracked from the byte that makes the answer READ_PER_TURN long: a smaller one never pauses for the turn,
    // and most answers are small, so most calls make no ReadPauses at all.
    if (this.pauses !== undefined) this.pauses.read(chunk.length);
    else if (this.received >= READ_PER_TURN) this.pausesOf(controller).read(this.received);
    this.next.onResponseData(controller, chunk);
  }

  onResponseEnd(): void {
    if (!this.settled) this.next.onResponseEnd();
  }

  /** `controller` is null when undici 8 fails a dispatch before the request started. */
  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.settled) return;
    const timedOut = err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError;
    const failure = classifyError(err, timedOut, this.timeoutMs, this.opts.timeoutKey);
    this.settle(isUnaskedContinue(err) ? { ok: false, failure, unaskedContinue: true } : { ok: false, failure });
  }

  pausesOf(controller: Dispatcher.DispatchController): ReadPauses {
    this.pauses ??= new ReadPauses(controller, () => !this.settled);
    return this.pauses;
  }

  /** Answered first, then the pieces let go of what they hold, then undici is told to drop the request. */
  stop(failure: AttemptFailure): void {
    if (this.settled) return;
    // A status already received (an answer too large or too slow after its headers) goes on the client span.
    this.settle(this.status > 0 ? { ok: false, failure, status: this.status } : { ok: false, failure });
    this.next.drop();
    this.controller?.abort(new errors.RequestAbortedError());
  }

  settle(r: CallResult): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.onSignal !== undefined) this.opts.signal?.removeEventListener('abort', this.onSignal);
    this.resolve(r);
  }
}
