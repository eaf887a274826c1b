/**
 * One large body in a resizable ArrayBuffer whose pages `resize(0)` gives back at once: a Buffer held for a batch
 * waits for a full GC, which V8 schedules by its heap (docs/memory-budget.md#where-the-bytes-live).
 */

export interface StoreOwner {
  adopt(store: ByteStore): void;
}

/** A chunked body's store starts here and doubles. */
const FIRST_BYTES = 4 * 1024 * 1024;

/** `resize(0)` costs ~17 ms per 50 MB (Node 20), so the reader thread installs itself here to do it off-loop. */
let shrinker: (ab: ArrayBuffer) => void = (ab) => ab.resize(0);

export function shrinkStoresWith(fn: (ab: ArrayBuffer) => void): void {
  shrinker = fn;
}

const stores = new WeakMap<ArrayBuffer, ByteStore>();

export class ByteStore {
  size = 0;
  private ab: ArrayBuffer;
  private released = false;
  private away = false;

  constructor(expected: number | undefined, max: number) {
    const limit = Math.max(max, expected ?? 0, 1);
    this.ab = new ArrayBuffer(Math.min(expected ?? FIRST_BYTES, limit), { maxByteLength: limit });
    stores.set(this.ab, this);
  }

  append(chunk: Buffer): void {
    if (this.released || this.away) return;
    const need = this.size + chunk.length;
    if (need > this.ab.byteLength) this.ab.resize(Math.min(this.ab.maxByteLength, Math.max(need, this.ab.byteLength * 2)));
    chunk.copy(new Uint8Array(this.ab, this.size, chunk.length));
    this.size = need;
  }

  /** The bytes written, without a copy: valid until the owner releases the store (empty after). */
  bytes(): Buffer {
    // Released, its memory may be detached (handed to the shrink thread): a view of it could not be made.
    if (this.released) return Buffer.alloc(0);
    return Buffer.from(this.ab, 0, this.size);
  }

  handOver(): ArrayBuffer {
    this.away = true;
    return this.ab;
  }

  returned(ab: ArrayBuffer): void {
    this.ab = ab;
    this.away = false;
    stores.set(ab, this);
    if (this.released) this.free();
  }

  /** Now, or as soon as the reader thread returns the pages; views over them become empty. */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (!this.away) this.free();
  }

  private free(): void {
    // Only when a reader thread that died kept the memory is this a plain, empty ArrayBuffer.
    if (this.ab.resizable && this.ab.byteLength > 0) shrinker(this.ab);
  }
}

/** Memory allocated whole for one body (body-bytes.ts): the reader thread may take it and give it back. */
const own = new WeakSet<ArrayBuffer>();

export function markOwn(buf: Buffer): Buffer {
  if (buf.buffer instanceof ArrayBuffer && buf.byteOffset === 0 && buf.length === buf.buffer.byteLength) own.add(buf.buffer);
  return buf;
}

export function isOwn(buf: Buffer): boolean {
  return buf.buffer instanceof ArrayBuffer && own.has(buf.buffer) && buf.byteOffset === 0 && buf.length === buf.buffer.byteLength;
}

export function storeOf(buf: Buffer): ByteStore | undefined {
  const ab = buf.buffer;
  return ab instanceof ArrayBuffer ? stores.get(ab) : undefined;
}
