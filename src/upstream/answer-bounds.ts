/** The answer's size bound and the memory budget's charge: two pieces of the call's handler chain (backend-call.ts). */
import type { Dispatcher } from 'undici';
import { codeForStatus } from '../errors.js';
import { cannotHold, tooLargeFailure } from './call-failure.js';
import type { AnswerHandler, AnswerHeaders, CallOptions, CallRun } from './call-types.js';

/** NaN when it declares none. */
export function declaredLength(headers: AnswerHeaders): number {
  const length = headers['content-length'];
  return typeof length === 'string' ? Number(length) : NaN;
}

export function streamOf(opts: CallOptions, status: number, bytes: number): CallOptions['stream'] {
  return opts.raw === true && status < 300 && opts.stream !== undefined && bytes > opts.stream.overBytes ? opts.stream : undefined;
}

/** Passes each callback on to the next piece, as undici's DecoratorHandler does (see backend-call.ts for why not it). */
class PassOn implements AnswerHandler {
  constructor(
    protected readonly call: CallRun,
    private readonly next: AnswerHandler,
  ) {}

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    this.next.onResponseStart(controller, statusCode, headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.next.onResponseData(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController): void {
    this.next.onResponseEnd(controller);
  }

  drop(): void {
    this.next.drop();
  }
}

/** Of an error answer only its first words are shown (post-responses.ts): reading more holds bytes for nothing. */
const ERROR_BODY_BYTES = 64 * 1024;

/** One byte over the bound ends the call at once; a declared length over it, before the body's first byte. */
export class SizeBound extends PassOn {
  private received = 0;
  private status = 0;

  override onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    this.status = statusCode;
    if (declaredLength(headers) > this.call.maxBytes) this.tooLarge();
    else super.onResponseStart(controller, statusCode, headers);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.received += chunk.length;
    if (this.received > this.call.maxBytes) this.tooLarge();
    else if (this.status >= 300 && this.received > ERROR_BODY_BYTES) {
      this.call.stop({ code: codeForStatus(this.status), message: `HTTP ${this.status} (its body passed ${ERROR_BODY_BYTES} bytes and was not read further)` });
    } else super.onResponseData(controller, chunk);
  }

  private tooLarge(): void {
    const { opts, replica, maxBytes } = this.call;
    this.call.stop(tooLargeFailure(maxBytes, opts.maxBytesKey ?? `backends.${replica.backend}.max_response_mb`));
  }
}

/** A streamed answer is never held whole: a chunked one is charged until it proves long enough to stream. */
export class BudgetCharge extends PassOn {
  private received = 0;
  private charged = 0;
  private charging = false;

  override onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    const { opts } = this.call;
    const n = declaredLength(headers);
    const kept = streamOf(opts, statusCode, n) === undefined;
    if (kept && opts.memory !== undefined && statusCode < 300 && n > opts.memory.capacity()) {
      this.cannotHold(n);
      return;
    }
    this.charging = kept && opts.memory !== undefined && opts.raw === true && statusCode < 300;
    super.onResponseStart(controller, statusCode, headers);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const { memory, stream } = this.call.opts;
    if (this.charging && memory !== undefined) {
      this.received += chunk.length;
      const streams = stream !== undefined && this.received > stream.overBytes;
      if (!streams && this.received > memory.capacity()) {
        this.cannotHold(this.received);
        return;
      }
      this.charged += chunk.length;
      if (!memory.charge(chunk.length)) {
        if (this.call.settled) return; // a shed shadow: its call was aborted
        // Backpressure: undici stops reading the socket, so TCP holds the rest at the backend.
        const pauses = this.call.pausesOf(controller);
        pauses.pause('budget');
        memory.whenRoom(() => pauses.resume('budget'));
      }
      // This chunk is kept, and handed to the tap with the rest kept so far; what follows goes to the tap alone.
      if (streams) this.charging = false;
    }
    super.onResponseData(controller, chunk);
  }

  override drop(): void {
    super.drop();
    if (this.charged > 0) this.call.opts.memory?.shrink(this.charged);
    this.charged = 0;
  }

  private cannotHold(bytes: number): void {
    const { memory } = this.call.opts;
    if (memory !== undefined) this.call.stop(cannotHold(bytes, memory));
  }
}
