/**
 * The AgentResponse layer of the byte indexer (docs/protocol-fidelity.md#how-a-batch-is-read), as strict as
 * agentOutputSchema; refusals are worded by response-check.ts. Depths: array 1, candidate 2, tool call 5.
 */
import { IndexReject } from '../json/json-index.js';
import type { MemoryLayout } from '../memory-tag.js';
import { DEFAULT_MAX_MEMORY_KEY_REPEATS, ProtocolWalker } from '../request/protocol-walker.js';
import type { Span } from '../request/request-index.js';
import { QUOTE, LBRACKET, LBRACE } from '../json/json-bytes.js';

export interface CandidateIndex {
  readonly span: Span;
  readonly requestId: string;
  readonly sourceKey: string;
  readonly indexKey: string;
  readonly status: 'completed' | 'error';
  readonly memory: MemoryLayout;
  /** Absent: the contract's default (`[]`, `null`); output/error also undefined when `null`. */
  readonly internalSteps: Span | undefined;
  readonly output: Span | undefined;
  readonly error: Span | undefined;
}

export interface AnswerElement {
  readonly span: Span;
  readonly candidate: CandidateIndex | undefined;
}

type AnswerIndexResult = { ok: true; elements: AnswerElement[] } | { ok: false; reject: IndexReject };

/**
 * `maxElements`: refused there, before an object is built for each of millions of elements (`[0,0,...]`);
 * `maxKeyRepeats` is server.max_memory_key_repeats.
 */
export function indexAgentResponse(
  buf: Buffer,
  maxDepth: number,
  memoryKey: string,
  maxElements = Number.MAX_SAFE_INTEGER,
  maxKeyRepeats = DEFAULT_MAX_MEMORY_KEY_REPEATS,
): AnswerIndexResult {
  try {
    return { ok: true, elements: new AnswerIndexer(buf, maxDepth, memoryKey, maxElements, maxKeyRepeats).run() };
  } catch (err) {
    if (err instanceof IndexReject) return { ok: false, reject: err };
    throw err;
  }
}

const isNumberStart = (c: number): boolean => c === 0x2d || (c >= 0x30 && c <= 0x39);

export const TOO_MANY_ELEMENTS = 'more elements than the candidates asked for';

class AnswerIndexer extends ProtocolWalker {
  constructor(
    buf: Buffer,
    maxDepth: number,
    memoryKey: string,
    private readonly maxElements: number,
    maxKeyRepeats: number,
  ) {
    super(buf, maxDepth, memoryKey, maxKeyRepeats);
  }

  run(): AnswerElement[] {
    const s = this.s;
    const p = s.ws(0);
    if (s.at(p) !== LBRACKET) {
      s.value(p, 0);
      throw new IndexReject(p, 'the answer is not a JSON array');
    }
    const elements: AnswerElement[] = [];
    const end = this.elements(p, 1, (q) => {
      if (elements.length >= this.maxElements) throw new IndexReject(q, `${TOO_MANY_ELEMENTS} (over ${this.maxElements})`);
      this.memoryOwner = elements.length;
      if (s.at(q) !== LBRACE) {
        const e = s.value(q, 1);
        elements.push({ span: { start: q, end: e }, candidate: undefined });
        return e;
      }
      const r = this.candidate(q);
      elements.push({ span: { start: q, end: r.end }, candidate: r.candidate });
      return r.end;
    });
    if (s.ws(end) !== s.len) throw new IndexReject(s.ws(end), 'extra data after the JSON value');
    if (s.nonFinite) throw new IndexReject(s.nonFiniteAt, 'a number overflows to infinity');
    return elements;
  }

  private candidate(p: number): { end: number; candidate: CandidateIndex | undefined } {
    const s = this.s;
    const tok = this.tok;
    const endAt = this.endAt;
    /** False once an unknown key is met, wherever it stands; a field's own validity is its last read's. */
    let ok = true;
    let requestId: string | undefined;
    let sourceKey: string | undefined;
    let indexKey: string | undefined;
    let status: 'completed' | 'error' | undefined;
    let memory: MemoryLayout | undefined;
    let internalSteps: Span | undefined;
    let output: Span | undefined;
    let error: Span | undefined;
    let stepsOk = true;
    let outputOk = true;
    let errorOk = true;
    // Repeated keys: the last occurrence counts, as JSON.parse keeps; a field and its validity are reset before each
    // read, so an invalid value followed by a valid one is as valid as the decoded answer.
    const intAt = (v: number, nonNegative: boolean): string | undefined => {
      if (!isNumberStart(s.at(v))) {
        endAt.at = s.value(v, 2);
        return undefined;
      }
      const e = s.number(v, tok);
      endAt.at = e;
      if (!tok.integer || (nonNegative && tok.negative)) return undefined;
      const text = s.latin1(v, e);
      return text === '-0' ? '0' : text;
    };
    const end = this.members(p, 2, (name, v) => {
      const c = s.at(v);
      switch (name) {
        case 'request_id':
          requestId = this.stringAt(v, 2, true);
          return endAt.at;
        case 'source_id':
          sourceKey = intAt(v, false);
          return endAt.at;
        case 'candidate_index':
          indexKey = intAt(v, true);
          return endAt.at;
        case 'status': {
          const t = this.stringAt(v, 2);
          status = t === 'completed' || t === 'error' ? t : undefined;
          return endAt.at;
        }
        case 'memory': {
          if (c !== LBRACE) {
            memory = undefined;
            return s.value(v, 2);
          }
          memory = this.memoryLayout(v, 3, (q) => s.value(q, 3));
          return memory.end;
        }
        case 'internal_steps': {
          stepsOk = c === LBRACKET;
          if (!stepsOk) return s.value(v, 2);
          const e = this.elements(v, 3, (q) => {
            if (s.at(q) !== LBRACE) stepsOk = false;
            return s.value(q, 3);
          });
          internalSteps = { start: v, end: e };
          return e;
        }
        case 'output':
        case 'error': {
          let e: number;
          let span: Span | undefined;
          let valid = true;
          if (c === 0x6e) e = s.value(v, 2); // null (or a refused literal: s.value throws on anything else)
          else if (c !== LBRACE) {
            valid = false;
            e = s.value(v, 2);
          } else {
            const r = name === 'output' ? this.decision(v) : this.agentError(v);
            valid = r.ok;
            e = r.end;
            span = { start: v, end: e };
          }
          if (name === 'output') {
            output = span;
            outputOk = valid;
          } else {
            error = span;
            errorOk = valid;
          }
          return e;
        }
        default:
          ok = false;
          return s.value(v, 2);
      }
    });
    if (!ok || !stepsOk || !outputOk || !errorOk || requestId === undefined || sourceKey === undefined || indexKey === undefined || status === undefined || memory === undefined) {
      return { end, candidate: undefined };
    }
    // agentOutputSchema's refinement: completed needs a decision and no error; error the reverse.
    if (status === 'completed' ? output === undefined || error !== undefined : error === undefined || output !== undefined) {
      return { end, candidate: undefined };
    }
    return {
      end,
      candidate: { span: { start: p, end }, requestId, sourceKey, indexKey, status, memory, internalSteps, output, error },
    };
  }

  /** Decoded only when the text itself is wanted (an id, a status); `endAt` receives where the value ends. */
  private stringAt(v: number, depth: number, nonEmpty = false): string | undefined {
    return this.isString(v, depth, nonEmpty) ? this.s.text(v, this.endAt.at, this.s.escaped) : undefined;
  }

  /**
   * Whether the value is a string token (of more than its two quotes, if `nonEmpty`), judged without decoding it: a
   * say or an error's message can be megabytes, and decoding one only to learn its type kept the reader thread busy.
   */
  private isString(v: number, depth: number, nonEmpty: boolean): boolean {
    const e = this.s.value(v, depth);
    this.endAt.at = e;
    return this.s.at(v) === QUOTE && (!nonEmpty || e - v > 2);
  }

  private readonly endAt = { at: 0 };

  /** A repeated `say` or `tool_calls` is judged by its last occurrence, as candidate() judges its fields. */
  private decision(p: number): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    let sayOk = true;
    let callsOk = true;
    const end = this.members(p, 3, (name, v) => {
      if (name === 'say') {
        sayOk = this.isString(v, 3, false);
        return this.endAt.at;
      }
      if (name === 'tool_calls') {
        callsOk = s.at(v) === LBRACKET;
        if (!callsOk) return s.value(v, 3);
        return this.elements(v, 4, (q) => {
          if (s.at(q) !== LBRACE) {
            callsOk = false;
            return s.value(q, 4);
          }
          const r = this.toolCall(q);
          if (!r.ok) callsOk = false;
          return r.end;
        });
      }
      ok = false;
      return s.value(v, 3);
    });
    return { end, ok: ok && sayOk && callsOk };
  }

  private toolCall(p: number): { end: number; ok: boolean } {
    return this.twoStrings(p, 5, ['name', 'target_robot_name'], 'arguments', (c) => c === LBRACE);
  }

  private agentError(p: number): { end: number; ok: boolean } {
    return this.twoStrings(p, 3, ['code', 'message'], 'component', (c) => c === QUOTE || c === 0x6e);
  }

  /** An object of the two non-empty strings `required` and an optional `other` whose first byte `otherOk` takes. */
  private twoStrings(
    p: number,
    depth: number,
    required: readonly [string, string],
    other: string,
    otherOk: (c: number) => boolean,
  ): { end: number; ok: boolean } {
    const s = this.s;
    let ok = true;
    let first = false;
    let second = false;
    // Repeated, each field counts by its last occurrence; an unknown field refuses wherever it stands.
    let otherValid = true;
    const end = this.members(p, depth, (field, v) => {
      if (field === required[0] || field === required[1]) {
        const given = this.isString(v, depth, true);
        if (field === required[0]) first = given;
        else second = given;
        return this.endAt.at;
      }
      if (field === other) otherValid = otherOk(s.at(v));
      else ok = false;
      return s.value(v, depth);
    });
    return { end, ok: ok && otherValid && first && second };
  }
}
