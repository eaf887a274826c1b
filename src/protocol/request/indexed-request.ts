/** An AgentRequest over its body's bytes, free-form values decoded on first read. */
import { MAX_JSON_DEPTH_CEILING } from '../json/json-depth.js';
import { memoryTagValue } from '../memory-tag.js';
import { ProtocolWalker } from './protocol-walker.js';
import { RawJson, type InputSlices } from './raw-json.js';
import type { InputIndex, RequestIndex, Span } from './request-index.js';
import type { AgentInput, JsonObject, MemberOf } from '../types.js';

const EMPTY_OBJECT = RawJson.of<JsonObject>('{}');
const EMPTY_LIST = RawJson.of<JsonObject[]>('[]');

function slice<T>(buf: Buffer, span: Span | undefined, absent: RawJson<T>): RawJson<T> {
  return span === undefined ? absent : new RawJson<T>(buf, span.start, span.end);
}

/** Getters on the prototype: a per-input closure kept the body alive (docs/performance.md#batches-die-young). */
export class IndexedAgentInput {
  readonly id: AgentInput['id'];
  readonly instruction: AgentInput['instruction'];
  readonly num_outputs: number;
  /** Private, so a spread or deepEqual of the input never sees the body. */
  readonly #raw: InputSlices;

  constructor(index: InputIndex, raw: InputSlices) {
    this.id = index.id;
    this.instruction = index.instruction;
    this.num_outputs = index.numOutputs;
    this.#raw = raw;
  }

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

  member(of: MemberOf, key: string): unknown {
    const raw = this.#raw;
    return of === 'memory' && key === raw.memoryKey ? memoryTagValue(raw) : memberOf(raw, of, key);
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

export interface IndexedAgentRequest {
  request_id: string;
  inputs: IndexedAgentInput[];
  repeatedKeys?: boolean;
}

export function indexedRequest(index: RequestIndex, memoryKey: string): IndexedAgentRequest {
  return { request_id: index.requestId, inputs: index.inputs.map((ii) => inputOf(index.buf, ii, memoryKey)), repeatedKeys: index.repeatedKeys };
}

/** Over a memory the indexer validated: nothing is refused. */
class MemberScan extends ProtocolWalker {
  constructor(buf: Buffer) {
    super(buf, MAX_JSON_DEPTH_CEILING, '');
  }

  /** The last member named `key`, as JSON.parse keeps. */
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

/** Where the object `of` begins, when the input has one with members. */
function objectStart({ index }: InputSlices, of: MemberOf): number | undefined {
  if (of === 'memory') return index.memoryLayout === undefined || index.memoryLayout.count === 0 ? undefined : index.memoryLayout.start;
  return (of === 'attributes' ? index.attributes : index.extraKeys)?.start;
}

/** Kept per key: a route matching on `memory.<key>` twice scans and decodes it once. */
function memberOf(raw: InputSlices, of: MemberOf, key: string): unknown {
  const start = objectStart(raw, of);
  if (start === undefined) return undefined;
  const cache = (raw.memberValues ??= new Map());
  const cached = `${of}:${key}`;
  if (cache.has(cached)) return cache.get(cached);
  const span = new MemberScan(raw.buf).find(start, key);
  const value = span === undefined ? undefined : new RawJson(raw.buf, span.start, span.end).value();
  cache.set(cached, value);
  return value;
}
