/** The end of a call's handler chain (backend-call.ts): the answer as text, as bytes (raw), or streamed to a tap. */
import { StringDecoder } from 'node:string_decoder';
import type { Dispatcher } from 'undici';
import { BodyBytes } from '../protocol/body-bytes.js';
import { declaredLength, streamOf } from './answer-bounds.js';
import { AnswerStream } from './answer-stream.js';
import type { AnswerHandler, AnswerHeaders, CallOptions, CallRun } from './call-types.js';
import { UTF8_BOM } from './text-body.js';

export class AnswerCollector implements AnswerHandler {
  private status = 0;
  private contentType: string | undefined;
  /** Text mode: the first chunk, until a second one arrives. */
  private readonly chunks: Buffer[] = [];
  private body: BodyBytes | undefined;
  private decoder: StringDecoder | undefined;
  private text = '';
  private stream: AnswerStream | undefined;

  constructor(private readonly call: CallRun) {}

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: AnswerHeaders): void {
    this.status = statusCode;
    const { opts } = this.call;
    if (opts.raw !== true) return;
    const ct = headers['content-type'];
    this.contentType = Array.isArray(ct) ? ct[0] : ct;
    const n = declaredLength(headers);
    const stream = streamOf(opts, statusCode, n);
    if (stream !== undefined) this.startTap(controller, stream.tap);
    else this.body = new BodyBytes({ declared: n, max: this.call.maxBytes, owner: opts.memory });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.stream !== undefined) {
      this.stream.feed(chunk);
      return;
    }
    const body = this.body;
    if (body !== undefined) {
      body.add(chunk);
      // No declared length: streamed from the moment the answer proves longer than the bound.
      const stream = streamOf(this.call.opts, this.status, body.size);
      if (stream !== undefined) {
        const held = body.received();
        this.body = undefined;
        this.startTap(controller, stream.tap).feed(held);
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
    const status = this.status;
    if (this.stream !== undefined) {
      this.stream.push(null);
      this.call.settle({ ok: true, status, text: '', streamed: true });
      return;
    }
    if (this.call.opts.raw === true) {
      const bytes = this.body?.received() ?? Buffer.alloc(0);
      this.call.settle({ ok: true, status, text: '', bytes, contentType: this.contentType });
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

  private startTap(controller: Dispatcher.DispatchController, tap: NonNullable<CallOptions['stream']>['tap']): AnswerStream {
    const call = this.call;
    this.stream = new AnswerStream(call.pausesOf(controller), (failure) => call.stop(failure));
    tap.take(this.stream);
    return this.stream;
  }
}
