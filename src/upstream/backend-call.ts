import { errors, type Dispatcher } from 'undici';
import type { AttemptFailure } from '../errors.js';
import { BudgetCharge, SizeBound } from './answer-bounds.js';
import { AnswerCollector } from './answer-collector.js';
import { classifyError, isUnaskedContinue, timeoutFailure } from './call-failure.js';
import type { AnswerHandler, AnswerHeaders, CallOptions, CallResult, CallRun } from './call-types.js';
import { READ_PER_TURN, ReadPauses } from './read-pauses.js';
import type { Replica } from './replica.js';

/**
 * Made here, not as `this.onSignal = () => ...`: V8 allocates such a literal in the old generation, where it kept
 * the whole call (request, answer, batch) alive until the next full GC (docs/performance.md#batches-die-young).
 */
function cancelOnAbort(h: BackendCall): () => void {
  return () => h.cancel();
}

/**
 * undici's dispatch handler for one call, outermost of a chain. Not undici's DecoratorHandler: deprecated in undici
 * 7, and a piece must let go of what it holds when the call is stopped (`drop`).
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
  private pauses: ReadPauses | undefined;
  private tail: Dispatcher.DispatchHandler | undefined;
  private streaming = false;

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

  /** undici's request() handler for this call (call-replica.ts): this chain answers undici in its place. */
  endingIn(tail: Dispatcher.DispatchHandler): this {
    this.tail = tail;
    return this;
  }

  /** The answer streams: undici's request() handler takes it, and its Readable alone paces the read from here. */
  handOver(controller: Dispatcher.DispatchController, status: number): Dispatcher.DispatchHandler | undefined {
    this.streaming = true;
    this.tail?.onRequestStart?.(controller, {});
    this.tail?.onResponseStart?.(controller, status, {}, '');
    return this.tail;
  }

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
    // Most answers are smaller than READ_PER_TURN, so most calls make no ReadPauses at all.
    if (this.pauses !== undefined) this.pauses.read(chunk.length);
    else if (this.received >= READ_PER_TURN) this.pausesOf(controller).read(this.received);
    this.next.onResponseData(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController): void {
    if (!this.settled) this.next.onResponseEnd(controller);
  }

  /** `controller` is null when undici 8 fails a dispatch before the request started. */
  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.settled) return;
    const timedOut = err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError;
    const failure = classifyError(err, timedOut, this.timeoutMs, this.opts.timeoutKey);
    this.settle(isUnaskedContinue(err) ? { ok: false, failure, unaskedContinue: true } : { ok: false, failure });
  }

  pausesOf(controller: Dispatcher.DispatchController): ReadPauses {
    // Idle once the answer streams: it and the Readable would resume each other's pauses (candidate-stream.ts yields).
    this.pauses ??= new ReadPauses(controller, () => !this.settled && !this.streaming);
    return this.pauses;
  }

  stop(failure: AttemptFailure): void {
    if (this.settled) return;
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
