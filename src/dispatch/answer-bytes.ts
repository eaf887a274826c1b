/**
 * Candidates written as bytes (docs/protocol-fidelity.md#how-a-batch-is-read). The AgentOutput objects the batch
 * hands around decode a field only when something reads it.
 */
import { parseExact, stringifyExact } from '../protocol/json/exact-json.js';
import { PartsWriter, type AnswerBody } from '../protocol/answer/answer-body.js';
import { inputMemoryLayout, taggedMemory, tagMember, tagMemory, type MemoryTag } from '../protocol/memory-tag.js';
import type { IndexedCandidate } from '../protocol/answer/response-check.js';
import type { InputSlices } from '../protocol/request/raw-json.js';
import { agentDecisionSchema, agentErrorSchema, isJsonObject } from '../protocol/schemas.js';
import type { IndexedAgentInput } from '../protocol/request/indexed-request.js';
import type { AgentError, AgentOutput, JsonObject } from '../protocol/types.js';
import { GatewayError } from '../errors.js';

/**
 * The decoded-on-read fields are prototype getters: per-candidate functions were kept alive by V8, with the
 * backend's answer they reach, through young-generation GCs (docs/performance.md#batches-die-young).
 */
export abstract class BytesCandidate implements AgentOutput {
  readonly #tag: MemoryTag;

  constructor(
    readonly request_id: string,
    readonly source_id: AgentOutput['source_id'],
    readonly candidate_index: number,
    readonly status: AgentOutput['status'],
    tag: MemoryTag,
  ) {
    this.#tag = tag;
  }

  abstract get memory(): JsonObject;
  abstract get internal_steps(): JsonObject[];
  abstract get output(): AgentOutput['output'];
  abstract get error(): AgentOutput['error'];
  abstract writeTo(w: PartsWriter): void;

  memoryTag(): MemoryTag {
    return this.#tag;
  }

  toJSON(): AgentOutput {
    const { request_id, source_id, candidate_index, status, memory, internal_steps, output, error } = this;
    return { request_id, source_id, candidate_index, status, memory, internal_steps, output, error };
  }
}

export function candidateTag(out: AgentOutput): MemoryTag | undefined {
  return out instanceof BytesCandidate ? out.memoryTag() : undefined;
}

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

export function writeCandidate(o: AgentOutput, w: PartsWriter): void {
  if (o instanceof BytesCandidate) o.writeTo(w);
  else w.text(stringifyExact(o));
}

type Span = { readonly start: number; readonly end: number };

const decode = (buf: Buffer, s: Span): unknown => parseExact(buf.toString('utf8', s.start, s.end)).value;

/** Proved an object by the indexer or this file's writer: anything else is a bug. */
function provenObject(v: unknown, what: string): JsonObject {
  if (isJsonObject(v)) return v;
  throw new GatewayError('GATEWAY_ERR_INTERNAL', `${what} decoded to a non-object`);
}

function provenObjects(v: unknown, what: string): JsonObject[] {
  if (Array.isArray(v) && v.every(isJsonObject)) return v;
  throw new GatewayError('GATEWAY_ERR_INTERNAL', `${what} decoded to something other than a list of objects`);
}

/** A backend's candidate re-addressed to the client's request; the schemas fill defaults as zod did. */
class IndexedOutput extends BytesCandidate {
  readonly #writer: CandidateWriter;
  readonly #buf: Buffer;
  readonly #index: IndexedCandidate['index'];
  readonly #id: Buffer;
  readonly #tagBytes: Buffer;
  #memory: JsonObject | undefined = undefined;
  #steps: JsonObject[] | undefined = undefined;
  #output: AgentOutput['output'] | undefined = undefined;
  #error: AgentOutput['error'] | undefined = undefined;

  constructor(writer: CandidateWriter, requestId: string, input: IndexedAgentInput, candidateIndex: number, cand: IndexedCandidate, tag: MemoryTag, tagBytes: Buffer) {
    super(requestId, input.id, candidateIndex, cand.index.status, tag);
    this.#writer = writer;
    this.#buf = cand.buf;
    this.#index = cand.index;
    this.#id = idBytes(input.raw);
    this.#tagBytes = tagBytes;
  }

  get memory(): JsonObject {
    return (this.#memory ??= tagMemory(provenObject(decode(this.#buf, this.#index.memory), 'memory'), this.#writer.memoryKey, this.memoryTag()));
  }

  get internal_steps(): JsonObject[] {
    const s = this.#index.internalSteps;
    return (this.#steps ??= s === undefined ? [] : provenObjects(decode(this.#buf, s), 'internal_steps'));
  }

  get output(): AgentOutput['output'] {
    const s = this.#index.output;
    if (this.#output === undefined) this.#output = s === undefined ? null : agentDecisionSchema.parse(decode(this.#buf, s));
    return this.#output;
  }

  get error(): AgentOutput['error'] {
    const s = this.#index.error;
    if (this.#error === undefined) this.#error = s === undefined ? null : agentErrorSchema.parse(decode(this.#buf, s));
    return this.#error;
  }

  /** See untaggedTail: the tag member is written as a marker piece, found again by identity and left out. */
  untaggedTail(): { tail: Buffer; at: number } {
    const marker = Buffer.from('\u0000', 'latin1');
    const mem: Buffer[] = [];
    taggedMemory(this.#buf, this.#index.memory, marker, true, mem);
    const cut = mem.indexOf(marker); // taggedMemory pushes the member it is given as one piece
    const before = Buffer.concat([COMPLETED_MEMORY, ...mem.slice(0, cut)]);
    const after: Buffer[] = mem.slice(cut + 1);
    const index = this.#index;
    after.push(STEPS, index.internalSteps === undefined ? EMPTY_LIST : slice(this.#buf, index.internalSteps));
    after.push(OUTPUT, index.output === undefined ? NULL : slice(this.#buf, index.output));
    after.push(ERROR, index.error === undefined ? NULL : slice(this.#buf, index.error), END);
    const tail = Buffer.allocUnsafeSlow(before.length + after.reduce((n, b) => n + b.length, 0));
    let at = before.copy(tail, 0);
    for (const b of after) at += b.copy(tail, at);
    return { tail, at: before.length };
  }

  writeTo(w: PartsWriter): void {
    const buf = this.#buf;
    const index = this.#index;
    this.#writer.start(w, this.#id, this.candidate_index);
    w.push(index.status === 'completed' ? COMPLETED_MEMORY : ERROR_MEMORY);
    const mem: Buffer[] = [];
    taggedMemory(buf, index.memory, this.#tagBytes, true, mem);
    for (const p of mem) w.push(p);
    w.push(STEPS);
    w.push(index.internalSteps === undefined ? EMPTY_LIST : slice(buf, index.internalSteps));
    w.push(OUTPUT);
    w.push(index.output === undefined ? NULL : slice(buf, index.output));
    w.push(ERROR);
    w.push(index.error === undefined ? NULL : slice(buf, index.error));
    w.push(END);
  }
}

const slice = (buf: Buffer, s: Span): Buffer => buf.subarray(s.start, s.end);

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

function idBytes(raw: InputSlices): Buffer {
  return raw.buf.subarray(raw.index.idSpan.start, raw.index.idSpan.end);
}

export class CandidateWriter {
  private readonly head: Buffer;
  private readonly inputMemory = new Map<InputSlices, Map<string, Buffer[]>>();

  constructor(
    requestId: string,
    readonly memoryKey: string,
  ) {
    this.head = Buffer.from(`{"request_id":${JSON.stringify(requestId)}`, 'utf8');
  }

  start(w: PartsWriter, id: Buffer, candidateIndex: number): void {
    w.push(this.head);
    w.push(SOURCE_ID);
    w.push(id);
    w.text(`,"candidate_index":${candidateIndex}`);
  }

  fromIndexed(requestId: string, input: IndexedAgentInput, candidateIndex: number, cand: IndexedCandidate, tag: MemoryTag): AgentOutput {
    return new IndexedOutput(this, requestId, input, candidateIndex, cand, tag, tagMember(this.memoryKey, tag).bytes);
  }

  /** An error candidate's memory as pieces of its input's bytes. */
  errorMemory(raw: InputSlices, tag: MemoryTag): readonly Buffer[] {
    const { key, bytes: tagBytes } = tagMember(this.memoryKey, tag);
    let perTag = this.inputMemory.get(raw);
    if (perTag === undefined) this.inputMemory.set(raw, (perTag = new Map()));
    let mem = perTag.get(key);
    if (mem === undefined) {
      mem = [];
      taggedMemory(raw.buf, inputMemoryLayout(raw), tagBytes, false, mem);
      perTag.set(key, mem);
    }
    return mem;
  }

  writeError(w: PartsWriter, raw: InputSlices, candidateIndex: number, memory: readonly Buffer[], error: AgentError): void {
    this.start(w, idBytes(raw), candidateIndex);
    w.push(ERROR_MEMORY);
    for (const p of memory) w.push(p);
    w.push(NO_STEPS_NO_OUTPUT);
    w.text(stringifyExact(error));
    w.push(END);
  }
}

/**
 * What the response cache keeps (docs/cache.md#what-an-entry-holds). A copy: the entry must not keep the backend's
 * whole answer alive.
 */
export function untaggedTail(out: AgentOutput): { tail: Buffer; at: number } | undefined {
  return out instanceof IndexedOutput && out.status === 'completed' ? out.untaggedTail() : undefined;
}

interface DecodedTail {
  memory: JsonObject;
  internal_steps: JsonObject[];
  output: AgentOutput['output'];
  error: AgentOutput['error'];
}

class CachedOutput extends BytesCandidate {
  readonly #head: Buffer;
  readonly #id: Buffer;
  readonly #before: Buffer;
  readonly #tagBytes: Buffer;
  readonly #after: Buffer;
  #decoded: DecodedTail | undefined = undefined;

  constructor(requestId: string, input: IndexedAgentInput, candidateIndex: number, stored: { tail: Buffer; at: number }, tag: MemoryTag, tagBytes: Buffer) {
    super(requestId, input.id, candidateIndex, 'completed', tag);
    this.#head = Buffer.from(`{"request_id":${JSON.stringify(requestId)}`, 'utf8');
    this.#id = idBytes(input.raw);
    this.#before = stored.tail.subarray(0, stored.at);
    this.#tagBytes = tagBytes;
    this.#after = stored.tail.subarray(stored.at);
  }

  #fields(): DecodedTail {
    if (this.#decoded === undefined) {
      // The tail is `,"status":...}`: with `{` for its comma it is the candidate's own JSON object, minus the ids.
      const text = `{${this.#before.toString('utf8', 1)}${this.#tagBytes.toString('utf8')}${this.#after.toString('utf8')}`;
      const obj = provenObject(parseExact(text).value, 'a cached tail');
      this.#decoded = {
        memory: provenObject(obj.memory, 'cached memory'),
        internal_steps: obj.internal_steps === undefined ? [] : provenObjects(obj.internal_steps, 'cached internal_steps'),
        output: obj.output === null || obj.output === undefined ? null : agentDecisionSchema.parse(obj.output),
        error: obj.error === null || obj.error === undefined ? null : agentErrorSchema.parse(obj.error),
      };
    }
    return this.#decoded;
  }

  get memory(): JsonObject {
    return this.#fields().memory;
  }

  get internal_steps(): JsonObject[] {
    return this.#fields().internal_steps;
  }

  get output(): AgentOutput['output'] {
    return this.#fields().output;
  }

  get error(): AgentOutput['error'] {
    return this.#fields().error;
  }

  writeTo(w: PartsWriter): void {
    w.push(this.#head);
    w.push(SOURCE_ID);
    w.push(this.#id);
    w.text(`,"candidate_index":${this.candidate_index}`);
    w.push(this.#before);
    w.push(this.#tagBytes);
    w.push(this.#after);
  }
}

export function cachedCandidate(requestId: string, input: IndexedAgentInput, candidateIndex: number, stored: { tail: Buffer; at: number }, memoryKey: string, tag: MemoryTag): AgentOutput {
  return new CachedOutput(requestId, input, candidateIndex, stored, tag, tagMember(memoryKey, tag).bytes);
}
