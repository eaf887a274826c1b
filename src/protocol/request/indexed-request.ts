/**
 * An AgentRequest over its body's bytes (docs/protocol-fidelity.md#how-a-batch-is-read): the small protocol
 * fields decoded by the indexer, the free-form values (tools, attributes, memory, extra_keys) as RawJson
 * slices decoded the first time something reads them. Routing reads a few small values; the memory of a
 * trajectory is decoded only if the gateway must write it itself (an error candidate), and forwarded as the
 * bytes the client sent otherwise, key order and every number included.
 */
import { MAX_JSON_DEPTH_CEILING } from '../json/json-depth.js';
import { memoryTagValue } from '../memory-tag.js';
import { ProtocolWalker } from './protocol-walker.js';
import { RawJson, type InputSlices } from './raw-json.js';
import type { InputIndex, RequestIndex, Span } from './request-index.js';
import type { AgentInput, JsonObject } from '../types.js';

const EMPTY_OBJECT = RawJson.of<JsonObject>('{}');
const EMPTY_LIST = RawJson.of<JsonObject[]>('[]');

function slice<T>(buf: Buffer, span: Span | undefined, absent: RawJson<T>): RawJson<T> {
  return span === undefined ? absent : new RawJson<T>(buf, span.start, span.end);
}

/**
 * An input read by the indexer: the small protocol fields as values, the free-form ones (tools, attributes,
 * memory, extra_keys) as getters on the prototype that decode the input's slices on first read. The getters
 * are shared by every input, as fastify's Request shares its getters: a per-input function would be allocated
 * per input, and V8 kept such inputs, with everything their functions reach (the whole body and index), alive
 * through young-generation GCs until the next full one (docs/performance.md#batches-die-young).
 * toJSON writes the contract's field order, so a serialized input is the decoded one.
 */
export class IndexedAgentInput {
  readonly id: AgentInput['id'];
  readonly instruction: AgentInput['instruction'];
  readonly num_outputs: number;
  /** A private field, so a spread or deepEqual of the input never sees the body. */
  readonly #raw: InputSlices;

  constructor(index: InputIndex, raw: InputSlices) {
    this.id = index.id;
    this.instruction = index.instruction;
    this.num_outputs = index.numOutputs;
    this.#raw = raw;
  }

  /** The input's bytes, which the batch path forwards instead of re-serializing the decoded fields. */
  get raw(): InputSlices {
    return this.#raw;
  }

  get tools(): JsonObject[] {
    return this.#raw.tools.value();
  }

  get attributes(): JsonObject {
    return this.#raw.attributes.value();
  }

  get memory(): JsonObject {
    return this.#raw.memory.value();
  }

  get extra_keys(): JsonObject {
    return this.#raw.extraKeys.value();
  }

  /**
   * The decoded value of memory's top-level member `key` (the last one, as JSON.parse keeps), or undefined:
   * only that member is decoded, never the rest of the memory.
   */
  memoryMember(key: string): unknown {
    const raw = this.#raw;
    return key === raw.memoryKey ? memoryTagValue(raw) : memoryMember(raw, key);
  }

  toJSON(): AgentInput {
    const { id, instruction, num_outputs, tools, attributes, memory, extra_keys } = this;
    return { id, instruction, num_outputs, tools, attributes, memory, extra_keys };
  }
}

function inputOf(buf: Buffer, index: InputIndex, memoryKey: string): IndexedAgentInput {
  return new IndexedAgentInput(index, {
    buf,
    index,
    memoryKey,
    tools: slice(buf, index.tools, EMPTY_LIST),
    attributes: slice(buf, index.attributes, EMPTY_OBJECT),
    memory: slice(buf, index.memory, EMPTY_OBJECT),
    extraKeys: slice(buf, index.extraKeys, EMPTY_OBJECT),
  });
}

/** A request read by the indexer (read-request.ts). */
export interface IndexedAgentRequest {
  request_id: string;
  inputs: IndexedAgentInput[];
  /** A protocol key repeated in the body (request-index.ts): never forward the body as is. */
  repeatedKeys?: boolean;
}

/** The request of an index. */
export function indexedRequest(index: RequestIndex, memoryKey: string): IndexedAgentRequest {
  return { request_id: index.requestId, inputs: index.inputs.map((ii) => inputOf(index.buf, ii, memoryKey)), repeatedKeys: index.repeatedKeys };
}

/** Walks the top level of an indexed memory for one member by name (a validated object: nothing is refused). */
class MemberScan extends ProtocolWalker {
  constructor(buf: Buffer) {
    super(buf, MAX_JSON_DEPTH_CEILING, '');
  }

  /** The value span of the last member named `key` of the object at `p`, if any. */
  find(p: number, key: string): { start: number; end: number } | undefined {
    let found: { start: number; end: number } | undefined;
    this.members(p, 0, (name, v) => {
      const e = this.s.value(v, 0);
      if (name === key) found = { start: v, end: e };
      return e;
    });
    return found;
  }
}

/**
 * The decoded value of memory's top-level member `key` (the last one, as JSON.parse keeps), or undefined when
 * memory has no such member: `memory.<path>` matches decode only the member they address. Found by one scan of
 * memory's top level, kept per key: a route matching on `memory.<key>` twice scans and decodes it once.
 */
function memoryMember(raw: InputSlices, key: string): unknown {
  const m = raw.index.memoryLayout;
  if (m === undefined || m.count === 0) return undefined;
  const cache = (raw.memberValues ??= new Map());
  if (cache.has(key)) return cache.get(key);
  const span = new MemberScan(raw.buf).find(m.start, key);
  const value = span === undefined ? undefined : new RawJson(raw.buf, span.start, span.end).value();
  cache.set(key, value);
  return value;
}
