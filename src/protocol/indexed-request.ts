/**
 * An AgentRequest over its body's bytes (docs/gateway-behaviour.md, "How a batch is read"): the small protocol
 * fields decoded by the indexer, the free-form values (tools, attributes, memory, extra_keys) as RawJson
 * slices decoded the first time something reads them. Routing reads a few small values; the memory of a
 * trajectory is decoded only if the gateway must write it itself (an error candidate), and forwarded as the
 * bytes the client sent otherwise, key order and every number included.
 */
import { RawJson, type InputSlices } from './raw-json.js';
import type { InputIndex, RequestIndex, Span } from './request-index.js';
import type { AgentInput, IndexedAgentInput, IndexedAgentRequest, JsonObject } from './types.js';

const EMPTY_OBJECT = RawJson.of('{}');
const EMPTY_LIST = RawJson.of('[]');

function slice(buf: Buffer, span: Span | undefined, absent: RawJson): RawJson {
  return span === undefined ? absent : new RawJson(buf, span.start, span.end);
}

/**
 * The decoded free-form fields of an indexed input, as own enumerable accessors (a spread or JSON.stringify of
 * the input sees ordinary decoded fields) whose getters every input shares, reading the input's `raw`. Why not
 * an object literal's getters: those are new functions per input, and V8 kept such inputs, with everything
 * their getters reach (the whole body and index), alive through young-generation GCs until the next full one
 * (docs/gateway-behaviour.md, "Batches die young").
 */
const INPUT_FIELDS: Record<Exclude<keyof AgentInput, 'id' | 'instruction' | 'num_outputs' | 'raw'>, PropertyDescriptor> = {
  // The indexer proved each value's type (a list of objects, an object) before these slices were made.
  tools: { get: function (this: IndexedAgentInput): JsonObject[] { return this.raw.tools.value() as JsonObject[]; }, enumerable: true, configurable: true },
  attributes: { get: function (this: IndexedAgentInput): JsonObject { return this.raw.attributes.value() as JsonObject; }, enumerable: true, configurable: true },
  memory: { get: function (this: IndexedAgentInput): JsonObject { return this.raw.memory.value() as JsonObject; }, enumerable: true, configurable: true },
  extra_keys: { get: function (this: IndexedAgentInput): JsonObject { return this.raw.extraKeys.value() as JsonObject; }, enumerable: true, configurable: true },
};

function inputOf(buf: Buffer, index: InputIndex, memoryKey: string): IndexedAgentInput {
  const raw: InputSlices = {
    buf,
    index,
    memoryKey,
    tools: slice(buf, index.tools, EMPTY_LIST),
    attributes: slice(buf, index.attributes, EMPTY_OBJECT),
    memory: slice(buf, index.memory, EMPTY_OBJECT),
    extraKeys: slice(buf, index.extraKeys, EMPTY_OBJECT),
  };
  const input = { id: index.id, instruction: index.instruction, num_outputs: index.numOutputs };
  Object.defineProperty(input, 'raw', { value: raw, enumerable: false });
  Object.defineProperties(input, INPUT_FIELDS);
  // The four accessors and `raw` are defined just above.
  return input as IndexedAgentInput;
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
export function memoryMember(raw: InputSlices, key: string): unknown {
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
