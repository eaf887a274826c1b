/** A validated slice of the body, decoded at most once, when read (docs/protocol-fidelity.md#how-a-batch-is-read). */
import { parseExact } from '../json/exact-json.js';
import type { InputIndex } from './request-index.js';
import type { JsonObject } from '../json/json-values.js';

/** `T` is what the indexer proved the bytes to be where the slice is made. */
export class RawJson<T = unknown> {
  private cache: { value: T } | undefined;

  constructor(
    readonly buf: Buffer,
    readonly start: number,
    readonly end: number,
  ) {}

  static of<T>(text: string): RawJson<T> {
    const buf = Buffer.from(text, 'utf8');
    return new RawJson<T>(buf, 0, buf.length);
  }

  get byteLength(): number {
    return this.end - this.start;
  }

  bytes(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }

  /** Serialize with stringifyExact: it may hold number markers. */
  value(): T {
    // The indexer proved these bytes JSON within the depth limit, and a T where the slice was typed.
    return (this.cache ??= { value: parseExact(this.buf.toString('utf8', this.start, this.end)).value as T }).value;
  }

  get decoded(): boolean {
    return this.cache !== undefined;
  }
}

export interface InputSlices {
  readonly buf: Buffer;
  readonly index: InputIndex;
  /** The one index.memoryLayout's tag members were found by. */
  readonly memoryKey: string;
  readonly tools: RawJson<JsonObject[]>;
  readonly attributes: RawJson<JsonObject>;
  readonly memory: RawJson<JsonObject>;
  readonly extraKeys: RawJson<JsonObject>;
  /** The members routing read, by `<object>:<key>`; not a global WeakMap (docs/performance.md#batches-die-young). */
  memberValues?: Map<string, unknown>;
}
