/** The end of a call's handler chain (backend-call.ts): the answer as text, as bytes (raw), or handed over to stream. */
import type { Dispatcher } from 'undici';
import { BodyBytes } from '../protocol/body-bytes.js';
import { declaredLength, streamOf } from './answer-bounds.js';
import type { AnswerHandler, AnswerHeaders, CallRun } from './call-types.js';
import { textOf } from './text-body.js';

export class AnswerCollector implements AnswerHandler {
  private status = 0;
  private contentType: string | undefined;
  private body: BodyBytes | undefined;
  /** Once the answer streams: undici's request() handler, whose Readable the tap reads. */
  private tail: Dispatcher.DispatchHandler | undefined;

  constructor(private readonly call: CallRun) {}

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    this.status = statusCode;
    const { opts } = this.call;
    const ct = headers['content-type'];
    this.contentType = Array.isArray(ct) ? ct[0] : ct;
    const n = declaredLength(headers);
    if (streamOf(opts, statusCode, n) !== undefined) this.tail = this.call.handOver(controller, statusCode);
    else this.body = new BodyBytes({ declared: n, max: this.call.maxBytes, owner: opts.memory });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.tail !== undefined) {
      this.tail.onResponseData?.(controller, chunk);
      return;
    }
    const body = this.body;
    if (body === undefined) return;
    body.add(chunk);
    // No declared length: streamed from the moment the answer proves longer than the bound, what is held first.
    if (streamOf(this.call.opts, this.status, body.size) !== undefined) {
      this.body = undefined;
      this.tail = this.call.handOver(controller, this.status);
      this.tail?.onResponseData?.(controller, body.received());
    }
  }

  onResponseEnd(controller: Dispatcher.DispatchController): void {
    const status = this.status;
    if (this.tail !== undefined) {
      this.tail.onResponseEnd?.(controller, {});
      this.call.settle({ ok: true, status, text: '', streamed: true });
      return;
    }
    const bytes = this.body?.received() ?? Buffer.alloc(0);
    if (this.call.opts.raw === true) this.call.settle({ ok: true, status, text: '', bytes, contentType: this.contentType });
    else this.call.settle({ ok: true, status, text: textOf(bytes) });
  }

  drop(): void {
    this.body?.drop();
    this.body = undefined;
  }
}
