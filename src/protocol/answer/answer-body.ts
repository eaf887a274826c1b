/** Never one string: an answer may exceed 512 MiB, and a memory costs a reference however many candidates carry it. */
import { storeOf } from '../byte-store.js';

export interface AnswerBody {
  readonly parts: readonly Buffer[];
  readonly length: number;
}

/** Pieces shorter than this are copied together; longer ones (memory, mostly) are referenced as they are. */
const SMALL = 4096;
/** Copied pieces are flushed in chunks of about this size, so the fronts write few, reasonably sized Buffers. */
const CHUNK = 16384;

/** Merges the small pieces: each res.write has a fixed cost. */
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

/** For what must hold the body at once (the Redis replay store, bounded by its own limit). */
export function joinBody(body: AnswerBody): Buffer {
  const [only] = body.parts;
  // A piece of a body's store (protocol/byte-store.ts) is empty once its batch ends: what outlives it is a copy.
  return body.parts.length === 1 && only !== undefined && storeOf(only) === undefined ? only : Buffer.concat(body.parts, body.length);
}
