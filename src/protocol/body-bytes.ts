/**
 * An HTTP body collected as it arrives: a client's batch on the raw front (http/batch-front.ts), a backend's
 * answer (upstream/backend-call.ts). With a declared length the bytes are copied into one Buffer of that size
 * and each chunk is free at once: a 2 MB body is held once while it arrives, not as its chunks until the last
 * one and then their concatenation besides, and the copy is spread over the chunks as they come. A body that
 * arrives in one chunk is that chunk, with no copy (small batches and answers). A body of unknown length
 * (chunked) is kept as its chunks: a large one is joined off the event loop (memory/offload.ts), where one
 * `Buffer.concat` of 50 MB held the loop for up to 170 ms. Callers bound the declared length before
 * (server.body_limit_mb, a backend's max_response_mb).
 */
/** A body as received: one Buffer, or its chunks in order (a body that came without a length, unjoined). */
export type ReceivedBody = Buffer | readonly Buffer[];

/** A body over this is read off the event loop (memory/offload.ts); one up to it is joined and read in place. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** The bytes of `body`, however it came. */
export function receivedSize(body: ReceivedBody): number {
  if (Buffer.isBuffer(body)) return body.length;
  let n = 0;
  for (const p of body) n += p.length;
  return n;
}

/** `body` as one Buffer, joined on this thread: for bodies read in place (small ones, or text a route needs whole). */
export function joinedHere(body: ReceivedBody): Buffer {
  if (Buffer.isBuffer(body)) return body;
  const [only] = body;
  return body.length === 1 && only !== undefined ? only : Buffer.concat(body);
}

export class BodyBytes {
  /** Bytes received so far. */
  size = 0;
  private chunks: Buffer[] = [];
  private whole: Buffer | undefined;
  private filled = 0;

  /** `declared`: the content-length, when the request has one. */
  constructor(private readonly declared: number | undefined) {}

  add(chunk: Buffer): void {
    // An empty chunk holds nothing, and may be a view of a Buffer its sender shares (undici's empty Buffer):
    // kept, it would be handed to the reader thread with the rest, and its store taken from the sender.
    if (chunk.length === 0) return;
    this.size += chunk.length;
    const whole = this.whole;
    if (whole !== undefined) {
      if (this.filled + chunk.length <= whole.length) {
        chunk.copy(whole, this.filled);
        this.filled += chunk.length;
        return;
      }
      // More than declared (node's parser and undici never hand over more): kept as chunks from here on.
      this.chunks.push(whole.subarray(0, this.filled));
      this.whole = undefined;
    } else if (this.chunks.length === 0 && this.declared !== undefined && chunk.length < this.declared) {
      // Allocated with the first byte, not before: a client that declares a length and sends nothing holds nothing.
      const buf = Buffer.allocUnsafe(this.declared);
      chunk.copy(buf, 0);
      this.whole = buf;
      this.filled = chunk.length;
      return;
    }
    this.chunks.push(chunk);
  }

  /** The request was answered before its body was read whole: what was kept goes. */
  drop(): void {
    this.chunks = [];
    this.whole = undefined;
  }

  /** What was received so far, as pieces in order (to hand on elsewhere); the collector keeps nothing after. */
  pieces(): Buffer[] {
    const whole = this.whole;
    const chunks = this.chunks;
    this.drop();
    return whole === undefined ? chunks : [whole.subarray(0, this.filled), ...chunks];
  }

  /**
   * The body once it is complete, unjoined: one Buffer when it is one (a declared length, a single chunk), else
   * its chunks, so a large one is joined off the event loop (memory/offload.ts); the collector keeps nothing after.
   */
  received(): ReceivedBody {
    if (this.whole !== undefined || this.chunks.length <= 1) return this.take();
    return this.pieces();
  }

  /** The body, once it is complete; the collector keeps nothing after. */
  take(): Buffer {
    const whole = this.whole;
    const chunks = this.chunks;
    this.drop();
    if (whole !== undefined) return this.filled === whole.length ? whole : whole.subarray(0, this.filled);
    const [only] = chunks;
    if (chunks.length === 1 && only !== undefined) return only;
    return Buffer.concat(chunks, this.size);
  }
}
