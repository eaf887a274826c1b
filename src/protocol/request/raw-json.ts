/**
 * A JSON value kept as the bytes it arrived in: a slice of the body, validated by the indexer
 * (request-index.ts), decoded exactly (exact-json.ts) only when something reads it, and at most once.
 * Forwarding it costs a subarray, never a copy (docs/protocol-fidelity.md#how-a-batch-is-read).
 */
import { parseExact } from '../json/exact-json.js';
import type { InputIndex } from './request-index.js';
import type { JsonObject } from '../json/json-values.js';

/**
 * `T` is what the indexer proved the bytes to be (an object, a list of objects) where the slice is made; a slice
 * of unknown content is a RawJson<unknown>.
 */
export class RawJson<T = unknown> {
  private cache: { value: T } | undefined;

  constructor(
    readonly buf: Buffer,
    readonly start: number,
    readonly end: number,
  ) {}

  /** A value the gateway holds as text (a default such as `{}`), not a slice of a body. */
  static of<T>(text: string): RawJson<T> {
    const buf = Buffer.from(text, 'utf8');
    return new RawJson<T>(buf, 0, buf.length);
  }

  get byteLength(): number {
    return this.end - this.start;
  }

  /** The value's bytes, shared with the body. */
  bytes(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }

  /** The value, numbers exact (number markers where JS cannot hold them: serialize with stringifyExact). */
  value(): T {
    return this.decode().value;
  }

  /** True once something read the value (the batch path checks that memory is not decoded for nothing). */
  get decoded(): boolean {
    return this.cache !== undefined;
  }

  private decode(): { value: T } {
    if (this.cache === undefined) {
      // The indexer proved these bytes JSON within server.max_json_depth, so this parse cannot fail, and
      // proved them a T where the slice was typed: the one place that fact meets the decoded value.
      this.cache = { value: parseExact(this.buf.toString('utf8', this.start, this.end)).value as T };
    }
    return this.cache;
  }
}

/**
 * What the batch path keeps of an input read by the indexer: its index (offsets of every field, memory's
 * top-level members) and its free-form values as slices, defaults included. Carried by an AgentInput as `raw`.
 */
export interface InputSlices {
  readonly buf: Buffer;
  readonly index: InputIndex;
  /** The memory_key the tag members were found by (index.memoryLayout). */
  readonly memoryKey: string;
  readonly tools: RawJson<JsonObject[]>;
  readonly attributes: RawJson<JsonObject>;
  readonly memory: RawJson<JsonObject>;
  readonly extraKeys: RawJson<JsonObject>;
  /**
   * Decoded top-level members of memory by name, filled on first use (indexed-request.ts memoryMember). A field
   * of the input, not a global WeakMap keyed by it: a young-generation GC treats an old WeakMap's values as live
   * (its keys are weak only to full GCs), so what they reach can outlive its batch
   * (docs/performance.md#batches-die-young).
   */
  memberValues?: Map<string, unknown>;
}
