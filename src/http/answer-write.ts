/** Batch answers written piece by piece, never joined into a copy (docs/protocol-fidelity.md#how-a-batch-is-read). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { ResponseStream } from '../batch/streamed-batch.js';
import { streamedHeaders, streamedTrailers, type AnswerFacts } from './front-rules.js';

export function bodyLength(body: string | AnswerBody): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.length;
}

/** Write `body` and end the response; headers must have been written or set. */
function writeBody(res: ServerResponse, body: string | AnswerBody): void {
  if (typeof body === 'string') {
    res.end(body);
    return;
  }
  const pieces = body.parts.values();
  let part = pieces.next();
  const next = (): void => {
    while (!part.done) {
      // A client that went away: nothing more is written, and the pieces go with the response.
      if (res.destroyed) return;
      const piece = part.value;
      part = pieces.next();
      if (part.done === true) {
        res.end(piece);
        return;
      }
      if (!res.write(piece)) {
        res.once('drain', next);
        return;
      }
    }
    res.end();
  };
  next();
}

/** Answers this small are taken whole by the socket's buffers: no client can hold them in the gateway. */
const HELD_BY_CLIENT_BYTES = 64 * 1024;

/**
 * A client that has not taken its whole answer `ms` after it began is disconnected: the answer's bytes, counted in
 * the memory budget until then, go with it (docs/limits-and-edges.md#deadlines).
 */
function sendWithin(res: ServerResponse, ms: number): void {
  if (res.writableFinished || res.destroyed) return;
  const timer = setTimeout(() => {
    if (!res.writableFinished) res.destroy();
  }, ms);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
}

/** Write `body` and end the response, the client given `sendMs` to take it. */
export function writeAnswer(res: ServerResponse, body: string | AnswerBody, sendMs: number): void {
  writeBody(res, body);
  if (bodyLength(body) > HELD_BY_CLIENT_BYTES) sendWithin(res, sendMs);
}

/**
 * A streamed answer's trailer needs chunked framing, which HTTP/1.0 lacks (node throws ERR_HTTP_TRAILER_INVALID),
 * and nginx talks HTTP/1.0 to its upstreams by default (docs/limits-and-edges.md#http10-clients).
 */
export function mayStream(req: IncomingMessage): boolean {
  return req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1);
}

/** `extraHeaders`, the front's own (connection: close while draining), are read when the head goes out. */
export class ResponseWriter implements ResponseStream {
  private facts: AnswerFacts = {};

  constructor(
    readonly out: ServerResponse,
    private readonly extraHeaders: () => Record<string, string> | undefined,
    private readonly sendMs: number,
  ) {}

  describe(requestId: string | undefined, cacheHits: number | undefined): void {
    this.facts = { requestId, cacheHits };
  }

  begin(): void {
    if (this.out.destroyed) return;
    this.out.writeHead(200, { ...streamedHeaders(this.facts), ...this.extraHeaders(), 'content-type': 'application/json' });
    sendWithin(this.out, this.sendMs);
  }

  end(overheadMs: number): void {
    if (this.out.destroyed || this.out.writableEnded) return;
    this.out.addTrailers(streamedTrailers(overheadMs));
    this.out.end();
  }
}
