/**
 * The client's answer as a list of Buffers (docs/protocol-fidelity.md#how-a-batch-is-read): the gateway's
 * own protocol text, and slices of the bytes the agents sent (memory, internal_steps, output, error), written
 * with backpressure by the HTTP fronts and never joined into one string. An answer can then be larger than a
 * JS string can hold (about 512 MiB), and a 64 KB memory costs a reference, not a copy, however many
 * candidates carry it.
 */
import { storeOf } from '../byte-store.js';

/** A JSON text in pieces; `length` is the sum of their byte lengths (the content-length). */
export interface AnswerBody {
  readonly parts: readonly Buffer[];
  readonly length: number;
}

/** Pieces shorter than this are copied together; longer ones (memory, mostly) are referenced as they are. */
const SMALL = 4096;
/** Copied pieces are flushed in chunks of about this size, so the fronts write few, reasonably sized Buffers. */
const CHUNK = 16384;

/** Collects an answer's pieces, merging the small ones (each res.write has a fixed cost). */
export class PartsWriter {
  private readonly parts: Buffer[] = [];
  private length = 0;
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  push(b: Buffer): void {
    const n = b.length;
    if (n === 0) return;
    this.length += n;
    if (n >= SMALL) {
      this.flush();
      this.parts.push(b);
      return;
    }
    this.pending.push(b);
    this.pendingBytes += n;
    if (this.pendingBytes >= CHUNK) this.flush();
  }

  /** Text the gateway wrote itself (JSON already). */
  text(s: string): void {
    this.push(Buffer.from(s, 'utf8'));
  }

  private flush(): void {
    const [only] = this.pending;
    if (this.pending.length === 1 && only !== undefined) this.parts.push(only);
    else if (this.pending.length > 1) this.parts.push(Buffer.concat(this.pending, this.pendingBytes));
    this.pending = [];
    this.pendingBytes = 0;
  }

  done(): AnswerBody {
    this.flush();
    return { parts: this.parts, length: this.length };
  }
}

/** The whole body as one Buffer: for what must hold it at once (the Redis replay store, bounded by its own limit). */
export function joinBody(body: AnswerBody): Buffer {
  const [only] = body.parts;
  // A piece of a body's store (protocol/byte-store.ts) is empty once its batch ends: what outlives it is a copy.
  return body.parts.length === 1 && only !== undefined && storeOf(only) === undefined ? only : Buffer.concat(body.parts, body.length);
}

/**
 * The memory that keeping `body` keeps alive: its pieces are slices, and a slice holds its whole backing
 * store (the backend's answer, a chunk of small pieces), counted once however many pieces share it.
 */
export function retainedBytes(body: AnswerBody): number {
  const seen = new Set<ArrayBufferLike>();
  let n = 0;
  for (const p of body.parts) {
    if (seen.has(p.buffer)) continue;
    seen.add(p.buffer);
    n += p.buffer.byteLength;
  }
  return n;
}
