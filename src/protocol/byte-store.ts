/**
 * The bytes of one large body (a batch over LARGE_BODY_BYTES, a backend's large answer) in memory the gateway
 * allocates for them and gives back itself (docs/memory-budget.md#where-the-bytes-live).
 *
 * Why not Buffers: node frees a Buffer's bytes only when V8 collects the object over it. A body held for a
 * batch's life outlives the young generation, so its bytes wait for a full collection, which V8 schedules by its
 * own heap, not by them: after a burst of large batches hundreds of megabytes stayed resident until a forced
 * collection forced from outside or the next burst. A resizable ArrayBuffer reserves its address range and commits
 * pages as it grows; `resize(0)` decommits them at once, whatever the collector does. So the batch that owns a
 * store (its memory-budget hold, memory/budget.ts) gives its pages back when it ends, and what the budget counts
 * is what the process holds.
 *
 * The chunks a socket delivers are copied in as they come and are garbage at once: they die young, where V8
 * frees them in its frequent small collections. A store is only ever handed to the reader thread
 * (reader/reader.ts) whole, because the gateway made it: nothing else in the process shares its memory.
 */

/** Who gives a store's pages back: the hold of the batch (or shadow call) the body belongs to. */
export interface StoreOwner {
  adopt(store: ByteStore): void;
}

/** The first size of a store whose final size is not known (a chunked body): it doubles from there. */
const FIRST_BYTES = 4 * 1024 * 1024;

/**
 * Who shrinks a released store's memory: `resize(0)` decommits its pages, which costs about 17 ms per 50 MB on
 * the thread that calls it (measured on Node 20), enough for ten released together to hold the event loop past
 * /health's 100 ms. The reader thread does it (reader/reader.ts installs it): handing the memory over costs
 * 0.1 ms here. Until one is installed (tests of this file alone), the store shrinks its memory itself.
 */
let shrinker: (ab: ArrayBuffer) => void = (ab) => ab.resize(0);

/** Installed once by the reader thread's module. */
export function shrinkStoresWith(fn: (ab: ArrayBuffer) => void): void {
  shrinker = fn;
}

/** The store each of the gateway's resizable ArrayBuffers belongs to (storeOf). */
const stores = new WeakMap<ArrayBuffer, ByteStore>();

export class ByteStore {
  /** Bytes written so far. */
  size = 0;
  private ab: ArrayBuffer;
  private released = false;
  /** Handed to the reader thread: the memory is not this thread's until it comes back. */
  private away = false;

  /** `expected`: the declared length, when known; `max`: the bound the caller enforces (no body grows past it). */
  constructor(expected: number | undefined, max: number) {
    const limit = Math.max(max, expected ?? 0, 1);
    this.ab = new ArrayBuffer(Math.min(expected ?? FIRST_BYTES, limit), { maxByteLength: limit });
    stores.set(this.ab, this);
  }

  /** Copy `chunk` in after what is there; the caller has bounded the total by `max`. */
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

  /** The memory, to transfer to the reader thread; it comes back through `returned`. */
  handOver(): ArrayBuffer {
    this.away = true;
    return this.ab;
  }

  /** The reader thread gave the memory back (transferred again: a new ArrayBuffer object over the same pages). */
  returned(ab: ArrayBuffer): void {
    this.ab = ab;
    this.away = false;
    stores.set(ab, this);
    if (this.released) this.free();
  }

  /** Give the pages back now (or as soon as the reader thread returns them). Views over them become empty. */
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

/** Memory the gateway allocated whole for one body (body-bytes.ts): the reader thread may take it and give it back. */
const own = new WeakSet<ArrayBuffer>();

export function markOwn(buf: Buffer): Buffer {
  if (buf.buffer instanceof ArrayBuffer && buf.byteOffset === 0 && buf.length === buf.buffer.byteLength) own.add(buf.buffer);
  return buf;
}

/** `buf` is the whole of memory the gateway allocated for one body. */
export function isOwn(buf: Buffer): boolean {
  return buf.buffer instanceof ArrayBuffer && own.has(buf.buffer) && buf.byteOffset === 0 && buf.length === buf.buffer.byteLength;
}

/** The store a Buffer is a view of, when the gateway made it, else undefined. */
export function storeOf(buf: Buffer): ByteStore | undefined {
  const ab = buf.buffer;
  return ab instanceof ArrayBuffer ? stores.get(ab) : undefined;
}

/** A new store, given back by `owner` when it ends (without an owner, by the collector). */
export function newStore(expected: number | undefined, max: number, owner: StoreOwner | undefined): ByteStore {
  const store = new ByteStore(expected, max);
  owner?.adopt(store);
  return store;
}
