/**
 * The AgentRequest layer of the byte indexer (docs/protocol-fidelity.md#how-a-batch-is-read): the zod schemas'
 * verdict and offsets in one pass. A repeated key counts last, as in Python. Depths: body 1, inputs 2, input 3.
 */
import { numberMark } from '../json/exact-json.js';
import { IndexReject } from '../json/json-index.js';
import { ProtocolWalker } from './protocol-walker.js';
import type { IntValue } from '../json/json-values.js';
import type { MemoryLayout } from '../memory-tag.js';
import { QUOTE, LBRACKET, LBRACE } from '../json/json-bytes.js';

/** Declared here, not taken from types.ts, which imports this file's types. */
interface IndexedInstruction {
  type: 'user' | 'env';
  content: string;
}

export interface IndexLimits {
  maxOutputsPerInput: number;
  maxJsonDepth: number;
  memoryKey: string;
  /** Inputs past server.max_candidates_per_batch are only scanned. */
  maxInputs?: number;
  /** server.max_validation_errors. */
  maxProblems?: number;
  /** server.max_memory_key_repeats; absent: its default. */
  maxMemoryKeyRepeats?: number;
}

/** What the indexer saw of a body it refused, for a 422 detail that costs no second parse. */
export interface RequestFindings {
  /** Only request_id and inputs, inputs a list: the problems are below. */
  readonly structured: boolean;
  readonly requestId: Span | undefined;
  readonly requestIdOk: boolean;
  readonly badInputs: readonly (Span & { index: number })[];
  readonly badInputCount: number;
  /** Elements of inputs, when there are more than maxInputs (else 0). */
  readonly tooManyInputs: number;
}

export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface InputIndex {
  readonly span: Span;
  readonly id: IntValue;
  readonly idSpan: Span;
  readonly idKey: string;
  readonly instruction: IndexedInstruction;
  readonly instructionSpan: Span;
  readonly tools: Span | undefined;
  readonly attributes: Span | undefined;
  readonly memory: Span | undefined;
  readonly extraKeys: Span | undefined;
  readonly numOutputs: number;
  readonly numOutputsSpan: Span | undefined;
  /** No object per member: a memory of millions of members costs what its tags do. */
  readonly memoryLayout: MemoryLayout | undefined;
}

export interface RequestIndex {
  readonly buf: Buffer;
  /** A protocol key appeared twice: never forward the body as is, a backend must see only the copy that counts. */
  readonly repeatedKeys: boolean;
  readonly requestId: string;
  readonly requestIdSpan: Span;
  readonly inputs: readonly InputIndex[];
}

type IndexResult = { ok: true; index: RequestIndex } | { ok: false; reject: IndexReject; findings: RequestFindings | undefined };

class FindingsReject extends IndexReject {
  constructor(
    at: number,
    reason: string,
    readonly findings: RequestFindings,
  ) {
    super(at, reason);
  }
}

interface Slot<T> {
  ok: boolean;
  value: T | undefined;
  span: Span;
}

function slot<T>(ok: boolean, value: T | undefined, start: number, end: number): Slot<T> {
  return { ok, value, span: { start, end } };
}

export function indexAgentRequest(buf: Buffer, limits: IndexLimits): IndexResult {
  try {
    return { ok: true, index: new RequestIndexer(buf, limits).run() };
  } catch (err) {
    if (err instanceof FindingsReject) return { ok: false, reject: err, findings: err.findings };
    if (err instanceof IndexReject) return { ok: false, reject: err, findings: undefined };
    throw err;
  }
}

function intValue(text: string): IntValue {
  return String(Number(text)) === text ? Number(text) : numberMark(text);
}

const FIELD_BIT = new Map<string, number>(
  ['id', 'instruction', 'tools', 'attributes', 'memory', 'num_outputs', 'extra_keys', 'type', 'content', 'request_id', 'inputs'].map((k, i) => [k, 1 << i]),
);

class RequestIndexer extends ProtocolWalker {
  private repeated = false;

  private seen(mask: number, name: string): number {
    const bit = FIELD_BIT.get(name) ?? 0;
    if ((mask & bit) !== 0) this.repeated = true;
    return mask | bit;
  }

  constructor(
    buf: Buffer,
    readonly limits: IndexLimits,
  ) {
    super(buf, limits.maxJsonDepth, limits.memoryKey, limits.maxMemoryKeyRepeats);
  }

  run(): RequestIndex {
    const s = this.s;
    const p = s.ws(0);
    if (s.at(p) !== LBRACE) {
      s.value(p, 0); // a body that is not even JSON is refused for that first
      throw new IndexReject(p, 'the body is not a JSON object');
    }
    let requestId: Slot<string> | undefined;
    let inputs: Slot<InputIndex[]> | undefined;
    const maxInputs = this.limits.maxInputs ?? Number.MAX_SAFE_INTEGER;
    const maxProblems = this.limits.maxProblems ?? Number.MAX_SAFE_INTEGER;
    let badInputs: (Span & { index: number })[] = [];
    let badInputCount = 0;
    let tooMany = 0;
    let topMask = 0;
    const end = this.members(p, 1, (name, v) => {
      topMask = this.seen(topMask, name);
      if (name === 'request_id') {
        const e = this.s.value(v, 1);
        const text = s.at(v) === QUOTE ? s.text(v, e, s.escaped) : undefined;
        requestId = slot(text !== undefined && text.length > 0, text, v, e);
        return e;
      }
      if (name === 'inputs') {
        if (s.at(v) !== LBRACKET) return this.invalid<InputIndex[]>(v, 1, (sl) => (inputs = sl));
        const list: InputIndex[] = [];
        let ok = true;
        let i = 0;
        badInputs = [];
        badInputCount = 0;
        tooMany = 0;
        const bad = (q: number, end: number, index: number): void => {
          ok = false;
          if (badInputs.length < maxProblems) badInputs.push({ start: q, end, index });
          badInputCount++;
        };
        const e = this.elements(v, 2, (q) => {
          const at = i;
          i++;
          if (at >= maxInputs) {
            tooMany = at + 1;
            return this.s.value(q, 2);
          }
          if (s.at(q) !== LBRACE) {
            const end = this.s.value(q, 2);
            bad(q, end, at);
            return end;
          }
          this.memoryOwner = at;
          const r = this.input(q);
          if (r.input === undefined) bad(q, r.end, at);
          else list.push(r.input);
          return r.end;
        });
        inputs = slot(ok && tooMany === 0, list, v, e);
        return e;
      }
      throw new IndexReject(v, `unknown field ${JSON.stringify(name)}`);
    });
    if (s.ws(end) !== s.len) throw new IndexReject(s.ws(end), 'extra data after the JSON value');
    const findings = (): RequestFindings => ({
      structured: inputs !== undefined && s.at(inputs.span.start) === LBRACKET,
      requestId: requestId?.span,
      requestIdOk: requestId?.ok === true,
      badInputs,
      badInputCount,
      tooManyInputs: tooMany,
    });
    if (requestId === undefined || inputs === undefined) throw new FindingsReject(p, 'request_id or inputs missing', findings());
    if (tooMany > 0) throw new FindingsReject(inputs.span.start, `more than ${maxInputs} inputs`, findings());
    if (!requestId.ok || requestId.value === undefined) throw new FindingsReject(requestId.span.start, 'request_id is not a non-empty string', findings());
    if (!inputs.ok || inputs.value === undefined) {
      if (s.nonFiniteAt !== -1) throw new FindingsReject(s.nonFiniteAt, 'a number overflows to infinity (finite_number)', findings());
      throw new FindingsReject(inputs.span.start, 'inputs is not a list of valid AgentInput', findings());
    }
    const seen = new Set<string>();
    for (const input of inputs.value) {
      if (seen.has(input.idKey)) throw new IndexReject(input.idSpan.start, 'duplicate input id');
      seen.add(input.idKey);
    }
    return { buf: this.buf, repeatedKeys: this.repeated, requestId: requestId.value, requestIdSpan: requestId.span, inputs: inputs.value };
  }

  private invalid<T>(v: number, depth: number, set: (sl: Slot<T>) => void): number {
    const e = this.s.value(v, depth);
    set(slot<T>(false, undefined, v, e));
    return e;
  }

  private finite(v: number, depth: number): { end: number; finite: boolean } {
    const s = this.s;
    const before = s.nonFinite;
    s.nonFinite = false;
    const end = s.value(v, depth);
    const finite = !s.nonFinite;
    s.nonFinite = before || s.nonFinite;
    return { end, finite };
  }

  private input(p: number): { end: number; input: InputIndex | undefined } {
    const s = this.s;
    const tok = this.tok;
    let id: Slot<IntValue> | undefined;
    let instruction: Slot<IndexedInstruction> | undefined;
    let tools: Slot<true> | undefined;
    let attributes: Slot<true> | undefined;
    let memory: Slot<MemoryLayout> | undefined;
    let numOutputs: Slot<number> | undefined;
    let extraKeys: Slot<true> | undefined;
    let unknown = false;
    let mask = 0;
    const end = this.members(p, 3, (name, v) => {
      mask = this.seen(mask, name);
      const c = s.at(v);
      switch (name) {
        case 'id': {
          if (c !== 0x2d && !(c >= 0x30 && c <= 0x39)) return this.invalid<IntValue>(v, 3, (sl) => (id = sl));
          const e = s.number(v, tok);
          id = slot(tok.integer, tok.integer ? intValue(s.latin1(v, e)) : undefined, v, e);
          return e;
        }
        case 'num_outputs': {
          if (c !== 0x2d && !(c >= 0x30 && c <= 0x39)) return this.invalid<number>(v, 3, (sl) => (numOutputs = sl));
          const e = s.number(v, tok);
          // Over 15 digits is over any limit the config can set; the 422 detail says by how much.
          const n = tok.integer && !tok.negative && e - v <= 15 ? Number(s.latin1(v, e)) : 0;
          numOutputs = slot(n > 0 && n <= this.limits.maxOutputsPerInput, n, v, e);
          return e;
        }
        case 'instruction': {
          if (c !== LBRACE) return this.invalid<IndexedInstruction>(v, 3, (sl) => (instruction = sl));
          const r = this.instruction(v);
          instruction = slot(r.value !== undefined, r.value, v, r.end);
          return r.end;
        }
        case 'tools': {
          if (c !== LBRACKET) return this.invalid<true>(v, 3, (sl) => (tools = sl));
          let ok = true;
          const e = this.elements(v, 4, (q) => {
            if (s.at(q) !== LBRACE) ok = false;
            const r = this.finite(q, 4);
            if (!r.finite) ok = false;
            return r.end;
          });
          tools = slot(ok, true, v, e);
          return e;
        }
        case 'memory': {
          if (c !== LBRACE) return this.invalid<MemoryLayout>(v, 3, (sl) => (memory = sl));
          const r = this.memory(v);
          memory = slot(r.finite, r, v, r.end);
          return r.end;
        }
        case 'attributes':
        case 'extra_keys': {
          const set = (sl: Slot<true>): void => {
            if (name === 'attributes') attributes = sl;
            else extraKeys = sl;
          };
          if (c !== LBRACE) return this.invalid<true>(v, 3, set);
          const r = this.finite(v, 3);
          set(slot(r.finite, true, v, r.end));
          return r.end;
        }
        default:
          // Not fatal: a later copy of `inputs` may replace this one (Python's json keeps the last).
          unknown = true;
          return this.s.value(v, 3);
      }
    });
    const bad = unknown || [id, instruction, tools, attributes, memory, numOutputs, extraKeys].some((f) => f !== undefined && !f.ok);
    if (bad || id?.value === undefined || instruction?.value === undefined) return { end, input: undefined };
    const idText = s.latin1(id.span.start, id.span.end);
    return {
      end,
      input: {
        span: { start: p, end },
        id: id.value,
        idSpan: id.span,
        // The grammar allows no leading zeros, so only `-0` needs normalizing.
        idKey: idText === '-0' ? '0' : idText,
        instruction: instruction.value,
        instructionSpan: instruction.span,
        tools: tools?.span,
        attributes: attributes?.span,
        memory: memory?.span,
        extraKeys: extraKeys?.span,
        numOutputs: numOutputs?.value ?? 1,
        numOutputsSpan: numOutputs?.span,
        memoryLayout: memory?.value,
      },
    };
  }

  private instruction(p: number): { end: number; value: IndexedInstruction | undefined } {
    const s = this.s;
    let type: Slot<'user' | 'env'> | undefined;
    let content: Slot<string> | undefined;
    let unknown = false;
    let mask = 0;
    const end = this.members(p, 4, (name, v) => {
      mask = this.seen(mask, name);
      const e = this.s.value(v, 4);
      // As in input(): a later copy of `instruction` or of `inputs` may replace this one, so not fatal.
      if (name !== 'type' && name !== 'content') {
        unknown = true;
        return e;
      }
      const text = s.at(v) === QUOTE ? s.text(v, e, s.escaped) : undefined;
      if (name === 'type') type = slot(text === 'user' || text === 'env', text === 'user' || text === 'env' ? text : undefined, v, e);
      else content = slot(text !== undefined, text, v, e);
      return e;
    });
    if (unknown || type?.value === undefined || content?.value === undefined || !type.ok || !content.ok) return { end, value: undefined };
    return { end, value: { type: type.value, content: content.value } };
  }

  private memory(p: number): MemoryLayout & { end: number; finite: boolean } {
    let finite = true;
    const layout = this.memoryLayout(p, 4, (v) => {
      const r = this.finite(v, 4);
      if (!r.finite) finite = false;
      return r.end;
    });
    return Object.assign(layout, { finite });
  }
}
