/**
 * Checking backend answers and our own answer against the contract's ordering rule
 * (the contract's AgentResponse.validate_request: input order, then ascending candidate_index).
 */
import { describePath, describeValue, safeReason } from './describe.js';
import { intKey, isNumberMark } from './exact-json.js';
import { agentOutputSchema, isJsonObject } from './schemas.js';
import type { AgentOutput, AgentRequest, IntValue } from './types.js';

/** What one sub-request asked of a backend: per input, its id and how many candidates. */
export interface SubRequestShape {
  requestId: string;
  inputs: { id: IntValue; count: number }[];
}

export type SlotResult = { ok: true; candidate: AgentOutput } | { ok: false; reason: string };

type SubResponseCheck =
  /** The whole answer is unusable (not an array, or it names another request): the sub-request failed. */
  | { ok: false; reason: string }
  /** Per input, per candidate index: a valid candidate or why that one slot failed. Extra candidates are ignored. */
  | { ok: true; slots: SlotResult[][]; extras: number };

function slotKey(sourceId: unknown, candidateIndex: unknown): string | undefined {
  if (sourceId === undefined || candidateIndex === undefined) return undefined;
  try {
    return `${intKey(sourceId)}/${intKey(candidateIndex)}`;
  } catch {
    return undefined;
  }
}

/**
 * Map a backend's answer onto the slots it was asked for. Wrong order is reordered; one malformed candidate
 * fails only its own slot; missing or duplicated candidates fail their slot; a request_id of another request
 * fails the whole answer, because it means the answer is not ours.
 */
export function checkSubResponse(body: unknown, shape: SubRequestShape): SubResponseCheck {
  if (!Array.isArray(body)) return { ok: false, reason: 'the answer is not a JSON array of AgentOutput' };
  const wanted = new Map<string, { input: number; index: number }>();
  shape.inputs.forEach((inp, i) => {
    const id = intKey(inp.id);
    for (let c = 0; c < inp.count; c++) wanted.set(`${id}/${c}`, { input: i, index: c });
  });
  const slots: (SlotResult | undefined)[][] = shape.inputs.map((inp) => new Array<SlotResult | undefined>(inp.count));
  let extras = 0;
  for (let n = 0; n < body.length; n++) {
    const raw: unknown = body[n];
    const obj = isJsonObject(raw) ? raw : undefined;
    // Only a real string naming another request condemns the whole answer; a marker (`1.0`) or any other type
    // is a malformed candidate, reported by the schema below for its own slot.
    const rid = obj?.request_id;
    if (typeof rid === 'string' && !isNumberMark(rid) && rid !== shape.requestId) {
      return {
        ok: false,
        reason: `candidate [${n}] answers request_id ${describeValue(rid)}, not ${describeValue(shape.requestId)}`,
      };
    }
    const key = obj ? slotKey(obj.source_id, obj.candidate_index) : undefined;
    const where = key === undefined ? undefined : wanted.get(key);
    if (where === undefined) {
      extras++;
      continue;
    }
    const prev = slots[where.input]![where.index]; // where.input indexes the request's inputs, one slot each
    if (prev !== undefined) {
      slots[where.input]![where.index] = { ok: false, reason: `candidate ${key} appears more than once` }; // where.input indexes the request's inputs, one slot each
      continue;
    }
    const parsed = agentOutputSchema.safeParse(raw);
    slots[where.input]![where.index] = parsed.success // where.input indexes the request's inputs, one slot each
      ? { ok: true, candidate: parsed.data }
      : {
          ok: false,
          // zod's messages are fixed text except unrecognized keys, which name the backend's keys: bounded.
          reason: safeReason(
            `candidate ${key} is malformed: ${parsed.error.issues.map((i) => `${describePath(i.path)}: ${i.message}`).join('; ')}`,
          ),
        };
  }
  const filled = slots.map((row, i) =>
    Array.from(row, (s, c): SlotResult => s ?? { ok: false, reason: `candidate ${intKey(shape.inputs[i]!.id)}/${c} is missing` }), // i < shape.inputs.length (loop bound)
  );
  return { ok: true, slots: filled, extras };
}

/**
 * AgentResponse.validate_request: one entry per requested candidate, in input order then ascending
 * candidate_index from 0, matching request_id and source_id. Returns the first problem, or undefined.
 */
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
