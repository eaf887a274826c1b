/** The end of a call's handler chain (backend-call.ts): the answer as text, as bytes (raw), or handed over to stream. */
import { StringDecoder } from 'node:string_decoder';
import type { Dispatcher } from 'undici';
import { BodyBytes } from '../protocol/body-bytes.js';
import { declaredLength, streamOf } from './answer-bounds.js';
import type { AnswerHandler, AnswerHeaders, CallRun } from './call-types.js';
import { UTF8_BOM } from './text-body.js';

export class AnswerCollector implements AnswerHandler {
  private status = 0;
  private contentType: string | undefined;
  /** Text mode: the first chunk, until a second one arrives. */
  private readonly chunks: Buffer[] = [];
  private body: BodyBytes | undefined;
  private decoder: StringDecoder | undefined;
  private text = '';
  /** Once the answer streams: undici's request() handler, whose Readable the tap reads. */
  private tail: Dispatcher.DispatchHandler | undefined;

  constructor(private readonly call: CallRun) {}

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    this.status = statusCode;
    const { opts } = this.call;
    if (opts.raw !== true) return;
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
    if (body !== undefined) {
      body.add(chunk);
      // No declared length: streamed from the moment the answer proves longer than the bound, what is held first.
      if (streamOf(this.call.opts, this.status, body.size) !== undefined) {
        this.body = undefined;
        this.tail = this.call.handOver(controller, this.status);
        this.tail?.onResponseData?.(controller, body.received());
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

  onResponseEnd(controller: Dispatcher.DispatchController): void {
    const status = this.status;
    if (this.tail !== undefined) {
      this.tail.onResponseEnd?.(controller, {});
      this.call.settle({ ok: true, status, text: '', streamed: true });
      return;
    }
    if (this.call.opts.raw === true) {
      this.call.settle({ ok: true, status, text: '', bytes: this.body?.received() ?? Buffer.alloc(0), contentType: this.contentType });
      return;
    }
    // Decoded like undici's body.text(): UTF-8, a leading byte order mark dropped.
    let text = this.decoder !== undefined ? this.text + this.decoder.end() : (this.chunks[0]?.toString('utf8') ?? '');
    if (text.charCodeAt(0) === UTF8_BOM) text = text.slice(1);
    this.call.settle({ ok: true, status, text });
  }

  drop(): void {
    this.chunks.length = 0;
    this.body?.drop();
    this.body = undefined;
    this.text = '';
  }
}
