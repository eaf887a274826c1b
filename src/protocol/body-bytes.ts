/** An HTTP body collected as it arrives: a very large one into a store (byte-store.ts), else one Buffer. */
import { ByteStore, markOwn, type StoreOwner } from './byte-store.js';

/**
 * A body past this (its length, or its bytes so far when chunked) goes into a store: it grows in place, and is
 * given back, or kept for the next body, when its batch ends (byte-store.ts).
 */
export const LARGE_BODY_BYTES = 1024 * 1024;

const DEFAULT_MAX_BYTES = 1024 * 1024 * 1024;

/**
 * Every chunk kept as it came has its own Buffer: a body sent 1 byte a chunk held ~390 bytes of memory a byte
 * (six 1 MB bodies, 2.5 GB). Chunks under this are gathered into Buffers of at least this size.
 */
export const GATHER_BYTES = 16 * 1024;

/** Small chunks left as they came before they are gathered: a body in a few chunks is not copied one more time. */
const GATHER_CHUNKS = 1024;

interface BodyBytesOptions {
  declared?: number;
  /** The caller refuses one byte more before adding it. */
  max?: number;
  owner?: StoreOwner;
}

export class BodyBytes {
  size = 0;
  /** In order: `chunks`, then `open` or `run` (never both). */
  private chunks: Buffer[] = [];
  /** Small chunks not yet gathered, `runBytes` long. */
  private run: Buffer[] = [];
  private runBytes = 0;
  /** Where small chunks are copied once a run was gathered into it, `openFilled` of it used. */
  private open: Buffer | undefined;
  private openFilled = 0;
  private whole: Buffer | undefined;
  private filled = 0;
  private store: ByteStore | undefined;
  private readonly declared: number | undefined;

  constructor(private readonly opts: BodyBytesOptions = {}) {
    this.declared = opts.declared !== undefined && Number.isSafeInteger(opts.declared) && opts.declared > 0 ? opts.declared : undefined;
  }

  add(chunk: Buffer): void {
    // An empty chunk holds nothing, and may be a view of a Buffer its sender shares (undici's empty Buffer).
    if (chunk.length === 0) return;
    this.size += chunk.length;
    if (this.store !== undefined) {
      this.store.append(chunk);
      return;
    }
    const declared = this.declared;
    if ((declared ?? this.size) > LARGE_BODY_BYTES) {
      // Allocated with the first byte, not before: a client that declares a length and sends nothing holds nothing.
      const store = new ByteStore(declared, Math.max(this.opts.max ?? DEFAULT_MAX_BYTES, declared ?? 0));
      this.opts.owner?.adopt(store);
      for (const c of this.taken()) store.append(c);
      store.append(chunk);
      this.store = store;
      return;
    }
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
    } else if (this.pieces === 0 && declared !== undefined && chunk.length < declared) {
      // Never from node's pool: a slab shared with other Buffers would live as long as this body does. Marked its
      // own as a hand-over to the reader thread needs, though bodies this small (at most 1 MiB) stay on the event loop.
      const buf = markOwn(Buffer.allocUnsafeSlow(declared));
      chunk.copy(buf, 0);
      this.whole = buf;
      this.filled = chunk.length;
      return;
    }
    this.keep(chunk);
  }

  /** Buffers held for the bytes so far, each with its own cost besides its bytes: read by the tests of gathering. */
  get pieces(): number {
    return this.chunks.length + this.run.length + (this.open === undefined ? 0 : 1) + (this.whole === undefined ? 0 : 1);
  }

  /** Answered before the body was read whole: a store's pages go at once. */
  drop(): void {
    this.store?.release();
    this.store = undefined;
    this.taken();
  }

  received(): Buffer {
    const store = this.store;
    if (store !== undefined) {
      this.store = undefined;
      return store.bytes();
    }
    const pieces = this.taken();
    const [only] = pieces;
    if (pieces.length === 1 && only !== undefined) return only;
    return Buffer.concat(pieces);
  }

  /**
   * A small byte is copied once here and once more when the body is joined or stored, whatever the chunking: a
   * run is gathered into a new Buffer, never into the bytes already gathered.
   */
  private keep(chunk: Buffer): void {
    if (chunk.length >= GATHER_BYTES) {
      this.close();
      this.chunks.push(chunk);
      return;
    }
    const open = this.open;
    if (open !== undefined) {
      if (this.openFilled + chunk.length <= open.length) {
        chunk.copy(open, this.openFilled);
        this.openFilled += chunk.length;
        return;
      }
      this.close();
    }
    this.run.push(chunk);
    this.runBytes += chunk.length;
    if (this.run.length < GATHER_CHUNKS && this.runBytes < GATHER_BYTES) return;
    const gathered = Buffer.allocUnsafeSlow(Math.max(GATHER_BYTES, this.runBytes));
    let at = 0;
    for (const c of this.run) at += c.copy(gathered, at);
    this.run = [];
    this.runBytes = 0;
    this.open = gathered;
    this.openFilled = at;
  }

  /** Before a large chunk, or when the open Buffer is full: what is pending becomes one piece. */
  private close(): void {
    if (this.open !== undefined) {
      this.chunks.push(this.open.subarray(0, this.openFilled));
      this.open = undefined;
      this.openFilled = 0;
    }
    const run = this.run;
    if (run.length === 0) return;
    const [only] = run;
    this.chunks.push(run.length === 1 && only !== undefined ? only : Buffer.concat(run, this.runBytes));
    this.run = [];
    this.runBytes = 0;
  }

  private taken(): Buffer[] {
    this.close();
    const whole = this.whole;
    const chunks = this.chunks;
    this.chunks = [];
    this.whole = undefined;
    return whole === undefined ? chunks : [whole.subarray(0, this.filled), ...chunks];
  }
}
