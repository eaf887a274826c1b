/** Batch answers written piece by piece, never joined into a copy (docs/protocol-fidelity.md#how-a-batch-is-read). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { ResponseStream } from '../batch/streamed-batch.js';
import { streamedHeaders, streamedTrailers, type AnswerFacts } from './front-rules.js';

export function bodyLength(body: string | AnswerBody): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.length;
}

/** Write `body` and end the response; headers must have been written or set. */
export function writeBody(res: ServerResponse, body: string | AnswerBody): void {
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
  ) {}

  describe(requestId: string | undefined, cacheHits: number | undefined): void {
    this.facts = { requestId, cacheHits };
  }

  begin(): void {
    if (!this.out.destroyed) this.out.writeHead(200, { ...streamedHeaders(this.facts), ...this.extraHeaders(), 'content-type': 'application/json' });
  }

  end(overheadMs: number): void {
    if (this.out.destroyed || this.out.writableEnded) return;
    this.out.addTrailers(streamedTrailers(overheadMs));
    this.out.end();
  }
}
