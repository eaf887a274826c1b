/**
 * Candidates written as bytes (docs/gateway-behaviour.md, "How a batch is read"): the protocol fields the gateway
 * sets (request_id, source_id as the client wrote it, the renumbered candidate_index, status), then the
 * candidate's memory with the tag inserted, internal_steps and output/error as the backend sent them. An error
 * candidate writes its input's memory from the client's body. The AgentOutput objects the batch hands around
 * (experiments, shadows, the order check) decode a field only when something reads it.
 */
import { parseExact, stringifyExact } from '../protocol/exact-json.js';
import { inputMemoryLayout, PartsWriter, taggedMemory, type AnswerBody } from '../protocol/answer-body.js';
import type { IndexedCandidate } from '../protocol/response-check.js';
import type { InputSlices } from '../protocol/raw-json.js';
import { agentDecisionSchema, agentErrorSchema } from '../protocol/schemas.js';
import type { AgentInput, AgentOutput, JsonObject } from '../protocol/types.js';
import type { MemoryTag } from '../routing/plan.js';

/** How one candidate writes itself, and its memory tag (read without decoding its memory). */
interface CandidateBytes {
  readonly tag: MemoryTag;
  write(w: PartsWriter): void;
}

const written = new WeakMap<AgentOutput, CandidateBytes>();

/** The memory tag a candidate carries: known without decoding memory for the candidates built here. */
export function candidateTag(out: AgentOutput): MemoryTag | undefined {
  return written.get(out)?.tag;
}

/** The answer: each candidate's bytes, or for a candidate decoded whole, stringifyExact of it. */
export function answerBody(outputs: readonly AgentOutput[], marked: boolean): AnswerBody {
  const w = new PartsWriter();
  w.push(LBRACKET);
  outputs.forEach((o, i) => {
    if (i > 0) w.push(COMMA);
    writeCandidate(o, w, marked);
  });
  w.push(RBRACKET);
  return w.done();
}

/** One candidate of an answer: its bytes, or for a candidate decoded whole, stringifyExact of it. */
export function writeCandidate(o: AgentOutput, w: PartsWriter, marked: boolean): void {
  const b = written.get(o);
  if (b !== undefined) b.write(w);
  else w.text(stringifyExact(o, marked));
}

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

/** source_id as the client wrote it (from its body), or as stringifyExact prints an id decoded some other way. */
function idBytes(from: AgentInput | InputSlices): Buffer {
  const raw = 'index' in from ? from : from.raw;
  if (raw !== undefined) return raw.buf.subarray(raw.index.idSpan.start, raw.index.idSpan.end);
  return Buffer.from(stringifyExact((from as AgentInput).id), 'latin1'); // not InputSlices: it has no `index`
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
  private readonly inputMemory = new WeakMap<InputSlices, Map<string, Buffer[]>>();

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
    const key = `${tag.backend}\u0000${tag.route}\u0000${tag.arm ?? ''}\u0000${tag.arm === undefined ? 0 : 1}`;
    let bytes = this.tags.get(key);
    if (bytes === undefined) {
      bytes = Buffer.from(`${JSON.stringify(this.memoryKey)}:${JSON.stringify(tag)}`, 'utf8');
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
  fromIndexed(requestId: string, input: AgentInput, candidateIndex: number, cand: IndexedCandidate, tag: MemoryTag): AgentOutput {
    const { buf, index } = cand;
    const id = idBytes(input);
    const { bytes: tagBytes } = this.tagMember(tag);
    const memoryKey = this.memoryKey;
    const slice = (s: { start: number; end: number }): Buffer => buf.subarray(s.start, s.end);
    const decode = (s: { start: number; end: number }): unknown => parseExact(buf.toString('utf8', s.start, s.end)).value;
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
    let memory: JsonObject | undefined;
    let steps: JsonObject[] | undefined;
    let output: AgentOutput['output'] | undefined;
    let error: AgentOutput['error'] | undefined;
    const out: AgentOutput = {
      request_id: requestId,
      source_id: input.id,
      candidate_index: candidateIndex,
      status: index.status,
      // The indexer proved each value's type (answer-index.ts); the schemas fill defaults as zod did.
      get memory(): JsonObject {
        return (memory ??= { ...(decode(index.memory) as JsonObject), [memoryKey]: tag }); // an object (indexer)
      },
      get internal_steps(): JsonObject[] {
        // A list of objects: the indexer proved it (answer-index.ts).
        return (steps ??= index.internalSteps === undefined ? [] : (decode(index.internalSteps) as JsonObject[]));
      },
      get output(): AgentOutput['output'] {
        if (output === undefined) output = index.output === undefined ? null : agentDecisionSchema.parse(decode(index.output));
        return output;
      },
      get error(): AgentOutput['error'] {
        if (error === undefined) error = index.error === undefined ? null : agentErrorSchema.parse(decode(index.error));
        return error;
      },
    };
    written.set(out, { tag, write });
    return out;
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
    written.set(out, {
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
