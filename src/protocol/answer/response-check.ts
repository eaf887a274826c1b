/** Backend answers and our own checked against AgentResponse.validate_request's ordering rule. */
import { describePath, describeValue, safeReason } from '../describe.js';
import type { AnswerElement, CandidateIndex } from './answer-index.js';
import { intKey, isNumberMark, parseExact } from '../json/exact-json.js';
import { agentOutputSchema, isJsonObject } from '../schemas.js';
import type { AgentOutput, AgentRequest, IntValue } from '../types.js';

export interface SubRequestShape {
  requestId: string;
  inputs: { id: IntValue; count: number }[];
}

export type Slot<C> = { ok: true; candidate: C } | { ok: false; reason: string };

export type SubResponseCheckOf<C> =
  /** Not an array, or it names another request: the sub-request failed. */
  | { ok: false; reason: string }
  | { ok: true; slots: Slot<C>[][]; extras: number };

function slotKey(sourceId: unknown, candidateIndex: unknown): string | undefined {
  if (sourceId === undefined || candidateIndex === undefined) return undefined;
  try {
    return `${intKey(sourceId)}/${intKey(candidateIndex)}`;
  } catch {
    return undefined;
  }
}

export interface ElementView<C> {
  /** Undefined when not a real string (a number marker). */
  requestId: string | undefined;
  /** Undefined when either is missing or not an integer. */
  key: string | undefined;
  validate(key: string): Slot<C>;
}

type Placed =
  | { kind: 'condemned'; reason: string }
  | { kind: 'extra' }
  /** `duplicate`: that slot was filled before and now failed. */
  | { kind: 'slot'; input: number; index: number; duplicate: boolean };

/**
 * Wrong order is reordered; a malformed, missing or duplicated candidate fails only its slot; a request_id of
 * another request fails the whole answer, which is then not ours.
 */
export class Placement<C> {
  private readonly wanted = new Map<string, { input: number; index: number }>();
  readonly slots: (Slot<C> | undefined)[][];
  extras = 0;

  constructor(private readonly shape: SubRequestShape) {
    shape.inputs.forEach((inp, i) => {
      const id = intKey(inp.id);
      for (let c = 0; c < inp.count; c++) this.wanted.set(`${id}/${c}`, { input: i, index: c });
    });
    this.slots = shape.inputs.map((inp) => new Array<Slot<C> | undefined>(inp.count));
  }

  add(k: number, el: ElementView<C>): Placed {
    const { shape } = this;
    // Only a real string naming another request condemns the whole answer; a marker (`1.0`) fails its slot.
    const rid = el.requestId;
    if (rid !== undefined && rid !== shape.requestId) {
      return { kind: 'condemned', reason: `candidate [${k}] answers request_id ${describeValue(rid)}, not ${describeValue(shape.requestId)}` };
    }
    const key = el.key;
    const where = key === undefined ? undefined : this.wanted.get(key);
    // wanted and slots are built from the same shape: every place wanted names has its row.
    const row = where === undefined ? undefined : this.slots[where.input];
    if (key === undefined || where === undefined || row === undefined) {
      this.extras++;
      return { kind: 'extra' };
    }
    const duplicate = row[where.index] !== undefined;
    row[where.index] = duplicate ? { ok: false, reason: `candidate ${key} appears more than once` } : el.validate(key);
    return { kind: 'slot', input: where.input, index: where.index, duplicate };
  }

  missing(input: number, index: number): Slot<C> {
    const shaped = this.shape.inputs[input]; // input < shape.inputs.length (callers' bound)
    return { ok: false, reason: `candidate ${shaped === undefined ? `#${input}` : intKey(shaped.id)}/${index} is missing` };
  }

  filled(): Slot<C>[][] {
    return this.slots.map((row, i) => Array.from(row, (s, c): Slot<C> => s ?? this.missing(i, c)));
  }
}

export function place<C>(n: number, view: (k: number) => ElementView<C>, shape: SubRequestShape): SubResponseCheckOf<C> {
  const placement = new Placement<C>(shape);
  for (let k = 0; k < n; k++) {
    const placed = placement.add(k, view(k));
    if (placed.kind === 'condemned') return { ok: false, reason: placed.reason };
  }
  return { ok: true, slots: placement.filled(), extras: placement.extras };
}

/**
 * The indexer refused `what`, which the decoded reader (parseExact + agentOutputSchema) accepts: the indexer's
 * refusal stands, saying so, as request.ts's readersDisagree (answer-differential.test.ts keeps this unreached).
 */
export function readersDisagree(what: string): string {
  return `the indexer refused ${what}, which the decoded reader accepts`;
}

/**
 * An element the indexer refused, decoded only to word the refusal as the schema words it: only a JSON object has
 * fields, zod says what is wrong with them. No slot is ever filled from the decoded value.
 */
export function refusedView(raw: unknown): ElementView<never> {
  const obj = isJsonObject(raw) ? raw : undefined;
  const rid = obj?.request_id;
  return {
    requestId: typeof rid === 'string' && !isNumberMark(rid) ? rid : undefined,
    key: obj ? slotKey(obj.source_id, obj.candidate_index) : undefined,
    validate: (key) => {
      const parsed = agentOutputSchema.safeParse(raw);
      if (parsed.success) return { ok: false, reason: readersDisagree(`candidate ${key}`) };
      return {
        ok: false,
        // zod's messages are fixed text except unrecognized keys, which name the backend's keys: bounded.
        reason: safeReason(
          `candidate ${key} is malformed: ${parsed.error.issues.map((i) => `${describePath(i.path)}: ${i.message}`).join('; ')}`,
        ),
      };
    },
  };
}

export class IndexedCandidate {
  constructor(
    readonly buf: Buffer,
    readonly index: CandidateIndex,
  ) {}
}

/** A slot holds only a candidate the indexer accepted; an element it refused fails its slot (refusedView). */
export function checkIndexedResponse(
  buf: Buffer,
  elements: readonly AnswerElement[],
  shape: SubRequestShape,
): SubResponseCheckOf<IndexedCandidate> {
  // k < elements.length (place's loop bound)
  return place<IndexedCandidate>(elements.length, (k) => indexedView(buf, elements[k]!), shape);
}

export function indexedView(buf: Buffer, el: AnswerElement): ElementView<IndexedCandidate> {
  const c = el.candidate;
  if (c !== undefined) {
    return { requestId: c.requestId, key: `${c.sourceKey}/${c.indexKey}`, validate: () => ({ ok: true, candidate: new IndexedCandidate(buf, c) }) };
  }
  // The indexer proved the whole answer JSON within the depth limit and its numbers finite: this parse holds.
  return refusedView(parseExact(buf.toString('utf8', el.span.start, el.span.end)).value);
}

/** AgentResponse.validate_request. */
export function validateAgainstRequest(request: AgentRequest, outputs: AgentOutput[]): string | undefined {
  let n = 0;
  for (const input of request.inputs) {
    const id = intKey(input.id);
    for (let c = 0; c < (input.num_outputs); c++, n++) {
      const o = outputs[n];
      if (o === undefined) return `missing candidate ${id}/${c} at position ${n}`;
      if (o.request_id !== request.request_id) return `position ${n}: request_id does not match`;
      if (intKey(o.source_id) !== id || intKey(o.candidate_index) !== String(c)) {
        return `position ${n}: expected ${id}/${c}, found ${intKey(o.source_id)}/${intKey(o.candidate_index)}`;
      }
    }
  }
  if (outputs.length !== n) return `expected ${n} candidates, found ${outputs.length}`;
  return undefined;
}
