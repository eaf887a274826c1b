/**
 * An HTTP body collected as it arrives: a client's batch on the batch front (http/front-exchange.ts), a backend's
 * answer (upstream/answer-collector.ts). A very large one (a declared length over STORE_BYTES, or a chunked one
 * once it grows past LARGE_BODY_BYTES) is copied into a store the gateway allocates and its owner gives back when
 * the batch ends (protocol/byte-store.ts): each chunk is free at once, the body is held once, and its pages go back
 * to the system without waiting for a collection. Any other with a declared length is copied into one Buffer of
 * that size, memory the gateway's own (the reader thread may take it whole); one that arrives in one chunk is that
 * chunk, with no copy (small batches and answers). Callers bound the size before (server.body_limit_mb, a
 * backend's max_response_mb) and pass that bound as `max`.
 */
import { markOwn, newStore, type ByteStore, type StoreOwner } from './byte-store.js';

/** A body over this is read off the event loop (reader/reader.ts); one up to it is read in place. */
export const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * A body with a declared length over this goes into a store. Below it a store costs more than it saves: the
 * pages of a new store fault in one by one (5.8 ms to fill 2 MB against 1.1 ms for a Buffer, measured here),
 * which tripled the gateway's CPU per 2 MB batch, while a Buffer that size is freed by the collections its own
 * allocations bring on.
 */
export const STORE_BYTES = 16 * 1024 * 1024;

/** The bound of a store when the caller names none. */
const DEFAULT_MAX_BYTES = 1024 * 1024 * 1024;

export interface BodyBytesOptions {
  /** The content-length, when the message has one. */
  declared?: number;
  /** The bytes the caller lets the body reach (it refuses one byte more before adding it). */
  max?: number;
  /** Who gives a large body's store back when its batch ends (memory/budget.ts holds). */
  owner?: StoreOwner;
}

export class BodyBytes {
  /** Bytes received so far. */
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
      const store = newStore(declared, Math.max(this.opts.max ?? DEFAULT_MAX_BYTES, declared ?? 0), this.opts.owner);
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

  /** The request was answered before its body was read whole: what was kept goes, a store's pages at once. */
  drop(): void {
    this.store?.release();
    this.store = undefined;
    this.taken();
  }

  /** The body once it is complete (or what came so far); the collector keeps nothing after. */
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

  /** What was kept outside a store, as pieces in order; the collector keeps none of them after. */
  private taken(): Buffer[] {
    const whole = this.whole;
    const chunks = this.chunks;
    this.chunks = [];
    this.whole = undefined;
    return whole === undefined ? chunks : [whole.subarray(0, this.filled), ...chunks];
  }
}
