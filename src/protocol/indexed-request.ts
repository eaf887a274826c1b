/**
 * An AgentRequest over its body's bytes (docs/gateway-behaviour.md, "How a batch is read"): the small protocol
 * fields decoded by the indexer, the free-form values (tools, attributes, memory, extra_keys) as RawJson
 * slices decoded the first time something reads them. Routing reads a few small values; the memory of a
 * trajectory is decoded only if the gateway must write it itself (an error candidate), and forwarded as the
 * bytes the client sent otherwise, key order and every number included.
 */
import { RawJson, type InputSlices } from './raw-json.js';
import type { InputIndex, RequestIndex, Span } from './request-index.js';
import type { AgentInput, JsonObject } from './types.js';

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
 * through young-generation GCs until the next full one (docs/gateway-behaviour.md, "Batches die young").
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
}

/** The request of an index. */
export function indexedRequest(index: RequestIndex, memoryKey: string): IndexedAgentRequest {
  return { request_id: index.requestId, inputs: index.inputs.map((ii) => inputOf(index.buf, ii, memoryKey)) };
}

/** The decoded value of memory's tag member (the last one, as JSON.parse keeps), or undefined when there is none. */
export function memoryTagValue(raw: InputSlices): unknown {
  const { tagMembers, memoryMembers } = raw.index;
  const last = tagMembers[tagMembers.length - 1];
  if (last === undefined) return undefined;
  const m = memoryMembers[last]!; // tagMembers index memoryMembers (request-index.ts)
  return new RawJson(raw.buf, m.valueStart, m.valueEnd).value();
}

/**
 * Memory's bytes without the gateway's tag member(s), as pieces of the body: everything else exactly as sent,
 * the whitespace and separators of the remaining members included. One piece when there is no tag.
 */
export function memoryWithoutTag(raw: InputSlices): Buffer[] {
  const { tagMembers, memoryMembers: members } = raw.index;
  const mem = raw.memory;
  if (tagMembers.length === 0) return [mem.bytes()];
  const buf = raw.buf;
  const cut = new Set(tagMembers);
  // A tag member exists, so memory has members; every index below is < members.length.
  const first = members[0]!;
  const last = members[members.length - 1]!; // members is not empty (above)
  const pieces: Buffer[] = [buf.subarray(mem.start, first.keyStart)];
  // Runs of kept members are written whole; a run followed by another keeps the separator after it.
  let runStart = -1;
  for (let i = 0; i <= members.length; i++) {
    const kept = i < members.length && !cut.has(i);
    if (kept && runStart === -1) runStart = i;
    if (kept || runStart === -1) continue;
    const a = members[runStart]!; // runStart was set to a kept member's index, < members.length
    let next = i;
    while (next < members.length && cut.has(next)) next++;
    // i <= members.length and i > runStart >= 0: members[i] exists when next < members.length, members[i - 1] always.
    pieces.push(buf.subarray(a.keyStart, next < members.length ? members[i]!.keyStart : members[i - 1]!.valueEnd));
    runStart = -1;
  }
  pieces.push(buf.subarray(last.valueEnd, mem.end));
  return pieces;
}

/**
 * The decoded value of memory's top-level member `key` (the last one, as JSON.parse keeps), or undefined when
 * memory has no such member: `memory.<path>` matches decode only the member they address.
 */
function memoryMember(raw: InputSlices, key: string): unknown {
  const members = raw.index.memoryMembers;
  for (let i = members.length - 1; i >= 0; i--) {
    const m = members[i]!; // i < members.length
    const token = raw.buf.toString('utf8', m.keyStart, m.keyEnd);
    // A key token the indexer validated: JSON.parse decodes its escapes; without one its text is between the quotes.
    const name = token.includes('\\') ? (JSON.parse(token) as string) : token.slice(1, -1);
    if (name !== key) continue;
    // Kept per member index: a route matching on `memory.<key>` twice decodes it once.
    const cache = (raw.memberValues ??= new Map());
    if (!cache.has(i)) cache.set(i, new RawJson(raw.buf, m.valueStart, m.valueEnd).value());
    return cache.get(i);
  }
  return undefined;
}
