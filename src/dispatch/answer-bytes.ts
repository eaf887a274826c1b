/**
 * Candidates written as bytes (docs/protocol-fidelity.md#how-a-batch-is-read): the protocol fields the gateway
 * sets (request_id, source_id as the client wrote it, the renumbered candidate_index, status), then the
 * candidate's memory with the tag inserted, internal_steps and output/error as the backend sent them. An error
 * candidate writes its input's memory from the client's body. The AgentOutput objects the batch hands around
 * (experiments, shadows, the order check) decode a field only when something reads it.
 */
import { GatewayError } from '../errors.js';
import { parseExact, stringifyExact } from '../protocol/exact-json.js';
import { inputMemoryLayout, joinBody, PartsWriter, taggedMemory, type AnswerBody } from '../protocol/answer-body.js';
import type { IndexedCandidate } from '../protocol/response-check.js';
import type { InputSlices } from '../protocol/raw-json.js';
import { agentDecisionSchema, agentErrorSchema, isJsonObject } from '../protocol/schemas.js';
import type { IndexedAgentInput } from '../protocol/indexed-request.js';
import type { AgentOutput, JsonObject } from '../protocol/types.js';
import { tagKey, tagMemberBytes, type MemoryTag } from '../routing/memory-tag.js';

/** How one candidate writes itself, and its memory tag (read without decoding its memory). */
interface CandidateBytes {
  readonly tag: MemoryTag;
  write(w: PartsWriter): void;
}

/**
 * Where a candidate built here keeps its CandidateBytes: a non-enumerable symbol property, so a spread copy (which
 * may renumber it) falls back to stringifyExact and JSON.stringify never sees it. Not a WeakMap: a young-generation
 * GC treats an old WeakMap's values as live, and these values reach back to their keys through the
 * batch, which can keep every candidate until a full GC.
 */
const BYTES = Symbol('candidate bytes');
type WithBytes = AgentOutput & { readonly [BYTES]?: CandidateBytes };

function bytesOf(out: AgentOutput): CandidateBytes | undefined {
  return (out as WithBytes)[BYTES]; // reads the optional slot setBytes defines; absent on other outputs
}

function setBytes(out: AgentOutput, b: CandidateBytes): void {
  Object.defineProperty(out, BYTES, { value: b, enumerable: false, configurable: true });
}

/** The memory tag a candidate carries: known without decoding memory for the candidates built here. */
export function candidateTag(out: AgentOutput): MemoryTag | undefined {
  return bytesOf(out)?.tag;
}

/** The answer: each candidate's bytes, or for a candidate decoded whole, stringifyExact of it. */
export function answerBody(outputs: readonly AgentOutput[]): AnswerBody {
  const w = new PartsWriter();
  w.push(LBRACKET);
  outputs.forEach((o, i) => {
    if (i > 0) w.push(COMMA);
    writeCandidate(o, w);
  });
  w.push(RBRACKET);
  return w.done();
}

/** One candidate of an answer: its bytes, or for a candidate decoded whole, stringifyExact of it. */
export function writeCandidate(o: AgentOutput, w: PartsWriter): void {
  const b = bytesOf(o);
  if (b !== undefined) b.write(w);
  else w.text(stringifyExact(o));
}

/** What an indexed candidate's accessors read: its answer's bytes and index, and what they decoded, once each. */
interface LazyCandidate {
  readonly buf: Buffer;
  readonly index: IndexedCandidate['index'];
  readonly memoryKey: string;
  readonly tag: MemoryTag;
  memory?: JsonObject;
  steps?: JsonObject[];
  output?: AgentOutput['output'];
  error?: AgentOutput['error'];
}

const LAZY = Symbol('indexed candidate');
type Lazy = { readonly [LAZY]: LazyCandidate };

const decode = (c: LazyCandidate, s: { start: number; end: number }): unknown => parseExact(c.buf.toString('utf8', s.start, s.end)).value;

/** `v` as the JSON object the indexer (or this file's writer) proved it is; a broken proof fails loudly. */
function objectOf(v: unknown, what: string): JsonObject {
  if (!isJsonObject(v)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a checked candidate's ${what} is not a JSON object`);
  return v;
}

/** `v` as the list of JSON objects the indexer (or this file's writer) proved it is. */
function objectsOf(v: unknown, what: string): JsonObject[] {
  if (!Array.isArray(v)) throw new GatewayError('GATEWAY_ERR_INTERNAL', `a checked candidate's ${what} is not a list`);
  return v.map((x) => objectOf(x, what));
}

/** The fields a candidate built here holds as accessors: every AgentOutput field but the four set as values. */
type LazyFields = Record<Exclude<keyof AgentOutput, 'request_id' | 'source_id' | 'candidate_index' | 'status'>, PropertyDescriptor>;

/**
 * An indexed candidate's decoded fields, as own enumerable accessors shared by every candidate. Not an object
 * literal's getters: those are new functions per candidate, and V8 kept such candidates, with everything their
 * getters reach (the backend's answer), alive through young-generation GCs until the next full one
 * (docs/performance.md#batches-die-young). The indexer proved each value's type (answer-index.ts); the
 * schemas fill defaults as zod did.
 */
const CANDIDATE_FIELDS: LazyFields = {
  memory: {
    get: function (this: Lazy): JsonObject {
      const c = this[LAZY];
      return (c.memory ??= { ...objectOf(decode(c, c.index.memory), 'memory'), [c.memoryKey]: c.tag });
    },
    enumerable: true,
    configurable: true,
  },
  internal_steps: {
    get: function (this: Lazy): JsonObject[] {
      const c = this[LAZY];
      return (c.steps ??= c.index.internalSteps === undefined ? [] : objectsOf(decode(c, c.index.internalSteps), 'internal_steps'));
    },
    enumerable: true,
    configurable: true,
  },
  output: {
    get: function (this: Lazy): AgentOutput['output'] {
      const c = this[LAZY];
      if (c.output === undefined) c.output = c.index.output === undefined ? null : agentDecisionSchema.parse(decode(c, c.index.output));
      return c.output;
    },
    enumerable: true,
    configurable: true,
  },
  error: {
    get: function (this: Lazy): AgentOutput['error'] {
      const c = this[LAZY];
      if (c.error === undefined) c.error = c.index.error === undefined ? null : agentErrorSchema.parse(decode(c, c.index.error));
      return c.error;
    },
    enumerable: true,
    configurable: true,
  },
};

const lit = (s: string): Buffer => Buffer.from(s, 'latin1');
const LBRACKET = lit('[');
const RBRACKET = lit(']');
const COMMA = lit(',');
const SOURCE_ID = lit(',"source_id":');
const COMPLETED_MEMORY = lit(',"status":"completed","memory":');
const ERROR_MEMORY = lit(',"status":"error","memory":');
const STEPS = lit(',"internal_steps":');
const OUTPUT = lit(',"output":');
const ERROR = lit(',"error":');
const EMPTY_LIST = lit('[]');
const NULL = lit('null');
const NO_STEPS_NO_OUTPUT = lit(',"internal_steps":[],"output":null,"error":');
const END = lit('}');

/** source_id as the client wrote it (from its body). */
function idBytes(raw: InputSlices): Buffer {
  return raw.buf.subarray(raw.index.idSpan.start, raw.index.idSpan.end);
}

/**
 * Tag members (`"<memory_key>":{...}`) per memory key and tag, kept across batches: their parts are config
 * names (backend, route, arm), so there are as many as the config can route to, and every batch needs them.
 */
const tagMembers = new Map<string, Map<string, Buffer>>();
/** A bound in case names ever stop being the config's: past it a member is built per batch, as before. */
const MAX_TAG_MEMBERS = 4096;

/** Per batch writer state: the request_id prefix, built once. */
export class CandidateWriter {
  private readonly head: Buffer;
  private readonly tags: Map<string, Buffer>;
  /** An input's memory with a tag, per input and tag: error candidates of one input share these pieces. */
  private readonly inputMemory = new Map<InputSlices, Map<string, Buffer[]>>();

  constructor(
    requestId: string,
    private readonly memoryKey: string,
  ) {
    this.head = Buffer.from(`{"request_id":${JSON.stringify(requestId)}`, 'utf8');
    let tags = tagMembers.get(memoryKey);
    if (tags === undefined) tagMembers.set(memoryKey, (tags = new Map()));
    this.tags = tags;
  }

  private tagMember(tag: MemoryTag): { key: string; bytes: Buffer } {
    const key = tagKey(tag);
    // A tag with trajectory members is one input's own: caching it across batches would only fill the map.
    if (tag.trajectory !== undefined) return { key, bytes: tagMemberBytes(this.memoryKey, tag) };
    let bytes = this.tags.get(key);
    if (bytes === undefined) {
      bytes = tagMemberBytes(this.memoryKey, tag);
      if (this.tags.size < MAX_TAG_MEMBERS) this.tags.set(key, bytes);
    }
    return { key, bytes };
  }

  private start(w: PartsWriter, id: Buffer, candidateIndex: number): void {
    w.push(this.head);
    w.push(SOURCE_ID);
    w.push(id);
    w.text(`,"candidate_index":${candidateIndex}`);
  }

  /** A backend's candidate re-addressed to the client's request, as bytes; the object decodes on read. */
  fromIndexed(requestId: string, input: IndexedAgentInput, candidateIndex: number, cand: IndexedCandidate, tag: MemoryTag): AgentOutput {
    const { buf, index } = cand;
    const id = idBytes(input.raw);
    const { bytes: tagBytes } = this.tagMember(tag);
    const memoryKey = this.memoryKey;
    const slice = (s: { start: number; end: number }): Buffer => buf.subarray(s.start, s.end);
    const write = (w: PartsWriter): void => {
      this.start(w, id, candidateIndex);
      w.push(index.status === 'completed' ? COMPLETED_MEMORY : ERROR_MEMORY);
      const mem: Buffer[] = [];
      taggedMemory(buf, index.memory, tagBytes, true, mem);
      for (const p of mem) w.push(p);
      w.push(STEPS);
      w.push(index.internalSteps === undefined ? EMPTY_LIST : slice(index.internalSteps));
      w.push(OUTPUT);
      w.push(index.output === undefined ? NULL : slice(index.output));
      w.push(ERROR);
      w.push(index.error === undefined ? NULL : slice(index.error));
      w.push(END);
    };
    const out = { request_id: requestId, source_id: input.id, candidate_index: candidateIndex, status: index.status };
    Object.defineProperty(out, LAZY, { value: { buf, index, memoryKey, tag } satisfies LazyCandidate, enumerable: false });
    Object.defineProperties(out, CANDIDATE_FIELDS);
    const candidate = out as AgentOutput; // the four accessors are defined just above
    setBytes(candidate, { tag, write });
    return candidate;
  }

  /**
   * The error candidate `out` (built by errorCandidate) written from its input's bytes: the input's memory
   * without its tag plus the new one, the same pieces for every error candidate of that input.
   */
  errorBytes(out: AgentOutput, raw: InputSlices, candidateIndex: number, tag: MemoryTag, error: { code: string; message: string; component: string | null }): void {
    const { key, bytes: tagBytes } = this.tagMember(tag);
    let perTag = this.inputMemory.get(raw);
    if (perTag === undefined) this.inputMemory.set(raw, (perTag = new Map()));
    let mem = perTag.get(key);
    if (mem === undefined) {
      mem = [];
      taggedMemory(raw.buf, inputMemoryLayout(raw), tagBytes, false, mem);
      perTag.set(key, mem);
    }
    const pieces = mem;
    const id = idBytes(raw);
    const errorText = stringifyExact(error);
    setBytes(out, {
      tag,
      write: (w) => {
        this.start(w, id, candidateIndex);
        w.push(ERROR_MEMORY);
        for (const p of pieces) w.push(p);
        w.push(NO_STEPS_NO_OUTPUT);
        w.text(errorText);
        w.push(END);
      },
    });
  }
}

/**
 * The bytes of a candidate after its candidate_index (`,"status":...}`): what the response cache keeps of it
 * (docs/cache.md), the memory with the tag it was written with included. Undefined when the candidate does not
 * start with the protocol fields of its request, input and index as the writers here write them (then it is
 * not cached). A copy: the entry must not keep the backend's whole answer alive.
 */
export function candidateTail(out: AgentOutput, input: IndexedAgentInput): Buffer | undefined {
  const w = new PartsWriter();
  writeCandidate(out, w);
  const bytes = joinBody(w.done());
  const head = Buffer.concat([
    Buffer.from(`{"request_id":${JSON.stringify(out.request_id)}`, 'utf8'),
    SOURCE_ID,
    idBytes(input.raw),
    Buffer.from(`,"candidate_index":${out.candidate_index}`, 'latin1'),
  ]);
  if (bytes.length <= head.length || bytes.compare(head, 0, head.length, 0, head.length) !== 0) return undefined;
  const tail = Buffer.allocUnsafeSlow(bytes.length - head.length);
  bytes.copy(tail, 0, head.length);
  return tail;
}

/** What a cached candidate's accessors read: its stored tail, decoded once when something reads a field. */
interface CachedTail {
  readonly tail: Buffer;
  decoded?: { memory: JsonObject; internal_steps: JsonObject[]; output: AgentOutput['output']; error: AgentOutput['error'] };
}

const CACHED = Symbol('cached candidate');
type Cached = { readonly [CACHED]: CachedTail };

function decodedTail(c: CachedTail): NonNullable<CachedTail['decoded']> {
  if (c.decoded === undefined) {
    // The tail is `,"status":...}`: with `{` for its comma it is the candidate's own JSON object, minus the ids.
    const obj = objectOf(parseExact(`{${c.tail.toString('utf8', 1)}`).value, 'cached tail');
    c.decoded = {
      memory: objectOf(obj.memory, 'memory'),
      internal_steps: obj.internal_steps === undefined ? [] : objectsOf(obj.internal_steps, 'internal_steps'),
      output: obj.output === null || obj.output === undefined ? null : agentDecisionSchema.parse(obj.output),
      error: obj.error === null || obj.error === undefined ? null : agentErrorSchema.parse(obj.error),
    };
  }
  return c.decoded;
}

/** Shared accessors of every cached candidate (not per-candidate getters: see CANDIDATE_FIELDS). */
const CACHED_FIELDS: LazyFields = {
  memory: { get: function (this: Cached) { return decodedTail(this[CACHED]).memory; }, enumerable: true, configurable: true },
  internal_steps: { get: function (this: Cached) { return decodedTail(this[CACHED]).internal_steps; }, enumerable: true, configurable: true },
  output: { get: function (this: Cached) { return decodedTail(this[CACHED]).output; }, enumerable: true, configurable: true },
  error: { get: function (this: Cached) { return decodedTail(this[CACHED]).error; }, enumerable: true, configurable: true },
};

/**
 * A cached candidate (docs/cache.md#partial-hits) re-addressed to the current request and input: the
 * request_id and source_id are the current ones, the rest is the stored tail byte for byte. `tag` is the memory
 * tag the tail carries (the first run's), which experiment accounting reads without decoding memory.
 */
export function cachedCandidate(requestId: string, input: IndexedAgentInput, candidateIndex: number, tail: Buffer, tag: MemoryTag): AgentOutput {
  const head = Buffer.from(`{"request_id":${JSON.stringify(requestId)}`, 'utf8');
  const id = idBytes(input.raw);
  const out = { request_id: requestId, source_id: input.id, candidate_index: candidateIndex, status: 'completed' as const };
  Object.defineProperty(out, CACHED, { value: { tail } satisfies CachedTail, enumerable: false });
  Object.defineProperties(out, CACHED_FIELDS);
  const candidate = out as AgentOutput; // the four accessors are defined just above
  setBytes(candidate, {
    tag,
    write: (w) => {
      w.push(head);
      w.push(SOURCE_ID);
      w.push(id);
      w.text(`,"candidate_index":${candidateIndex}`);
      w.push(tail);
    },
  });
  return candidate;
}
