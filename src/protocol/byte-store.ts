/**
 * One large body, given back when its batch ends: a Buffer held for a batch waits for a full GC, which V8 schedules
 * by its heap, and its bytes start collections that free nothing (docs/memory-budget.md#where-the-bytes-live). A
 * body of known length up to REUSE_MAX_BYTES is plain memory kept for the next one; a larger or chunked one is a
 * resizable ArrayBuffer whose pages `resize(0)` gives back at once.
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

/** A store's memory is kept for reuse from this size up to REUSE_MAX_BYTES, and at most IDLE_MAX_BYTES of it. */
const REUSE_MIN_BYTES = 1024 * 1024;
export const REUSE_MAX_BYTES = 8 * 1024 * 1024;
const IDLE_MAX_BYTES = 32 * 1024 * 1024;
const idle: ArrayBuffer[] = [];
let idleBytes = 0;

/** The latest given back that is large enough and at most four times `size`. */
function reused(size: number): ArrayBuffer {
  for (let i = idle.length - 1; i >= 0; i--) {
    const ab = idle[i];
    if (ab === undefined || ab.byteLength < size || ab.byteLength > 4 * size) continue;
    idle.splice(i, 1);
    idleBytes -= ab.byteLength;
    return ab;
  }
  return new ArrayBuffer(size);
}

export class ByteStore {
  size = 0;
  private ab: ArrayBuffer;
  private released = false;
  private away = false;
  private readonly limit: number;

  constructor(expected: number | undefined, max: number) {
    this.limit = Math.max(max, expected ?? 0, 1);
    // Not resizable when it need not be: V8 reads views of a resizable buffer more slowly (S2's scan took a third more).
    if (expected !== undefined && expected <= REUSE_MAX_BYTES) this.ab = reused(expected);
    else this.ab = new ArrayBuffer(Math.min(expected ?? FIRST_BYTES, this.limit), { maxByteLength: this.limit });
    stores.set(this.ab, this);
  }

  append(chunk: Buffer): void {
    if (this.released || this.away) return;
    const need = this.size + chunk.length;
    if (need > this.ab.byteLength) this.grow(need);
    chunk.copy(new Uint8Array(this.ab, this.size, chunk.length));
    this.size = need;
  }

  /** Past a declared length (node's parser and undici never send more) a plain store moves into a resizable one. */
  private grow(need: number): void {
    const ab = this.ab;
    const to = Math.min(this.limit, Math.max(need, ab.byteLength * 2));
    if (ab.resizable) return ab.resize(to);
    this.ab = new ArrayBuffer(to, { maxByteLength: this.limit });
    new Uint8Array(this.ab).set(new Uint8Array(ab, 0, this.size));
    stores.set(this.ab, this);
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
    const ab = this.ab;
    if (ab.byteLength === 0) return; // a reader thread that died kept the memory
    if (ab.resizable) return shrinker(ab);
    giveBack(ab, true);
  }
}

/**
 * Kept for the next body if there is room. Moved (transferred) when views of it may be out, so that they are empty
 * from here, as after a shrink, and none sees the next body; and when not kept, so that it dies young: the new
 * ArrayBuffer's bytes go at the next young collection, where the old one, promoted during its batch, would hold
 * them until a full one (S6 peaked at 411 MB instead of 365). Each move counts its bytes as new memory for V8.
 */
function giveBack(ab: ArrayBuffer, viewsOut: boolean): void {
  const kept = ab.byteLength >= REUSE_MIN_BYTES && idleBytes + ab.byteLength <= IDLE_MAX_BYTES;
  const moved = viewsOut || !kept ? structuredClone(ab, { transfer: [ab] }) : ab;
  if (!kept) return;
  idle.push(moved);
  idleBytes += moved.byteLength;
}

/**
 * A copy whose views never leave its owner (replay's stored answers: a hit is a copy of it), in the same reused
 * memory, kept without a move: no view of it is out, and a move for every entry made a young collection every few
 * batches (docs/memory-budget.md#where-the-bytes-live).
 */
export class PooledCopy {
  readonly length: number;
  private ab: ArrayBuffer | undefined;

  constructor(parts: readonly Uint8Array[], length: number) {
    this.length = length;
    const ab = reused(length);
    let at = 0;
    for (const p of parts) {
      new Uint8Array(ab, at, p.length).set(p);
      at += p.length;
    }
    this.ab = ab;
  }

  /** A Buffer of its own with the bytes (empty once released). */
  copy(): Buffer {
    return this.ab === undefined ? Buffer.alloc(0) : Buffer.from(new Uint8Array(this.ab, 0, this.length));
  }

  release(): void {
    if (this.ab !== undefined) giveBack(this.ab, false);
    this.ab = undefined;
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
