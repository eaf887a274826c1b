/** An HTTP body collected as it arrives: a very large one into a store (byte-store.ts), else one Buffer. */
import { ByteStore, markOwn, type StoreOwner } from './byte-store.js';

/** A chunked body past this moves into a store, which grows in place: joining its chunks would hold them twice. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** Below this a store's pages faulting in one by one cost more (5.8 ms to fill 2 MB against 1.1 ms for a Buffer). */
export const STORE_BYTES = 16 * 1024 * 1024;

const DEFAULT_MAX_BYTES = 1024 * 1024 * 1024;

interface BodyBytesOptions {
  declared?: number;
  /** The caller refuses one byte more before adding it. */
  max?: number;
  owner?: StoreOwner;
}

export class BodyBytes {
  size = 0;
  private chunks: Buffer[] = [];
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
    if (declared === undefined ? this.size > LARGE_BODY_BYTES : declared > STORE_BYTES) {
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
    } else if (this.chunks.length === 0 && declared !== undefined && chunk.length < declared) {
      // Never from node's pool: the reader thread may take its memory whole (markOwn).
      const buf = markOwn(Buffer.allocUnsafeSlow(declared));
      chunk.copy(buf, 0);
      this.whole = buf;
      this.filled = chunk.length;
      return;
    }
    this.chunks.push(chunk);
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

  private taken(): Buffer[] {
    const whole = this.whole;
    const chunks = this.chunks;
    this.chunks = [];
    this.whole = undefined;
    return whole === undefined ? chunks : [whole.subarray(0, this.filled), ...chunks];
  }
}
