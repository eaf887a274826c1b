/**
 * A backend's answer, as its bytes, checked against what one sub-request asked for (docs/protocol-fidelity.md#how-a-batch-is-read):
 * the byte indexer first (answer-index.ts), so each valid candidate stays the backend's
 * bytes and nothing is decoded that nobody reads; an answer the indexer refuses whole goes through the decoding
 * path (parseExact, then the schemas), whose reasons are the ones a backend's operator reads in the logs.
 *
 * One function for the primary sub-requests and for shadow copies, so both judge an answer the same way.
 */
import { isUtf8 } from 'node:buffer';
import { indexAgentResponse, TOO_MANY_ELEMENTS, type AnswerElement } from './answer-index.js';
import { parseExact } from '../json/exact-json.js';
import { exceedsDepth, tooDeepMessage } from '../json/json-depth.js';
import { checkIndexedResponse, checkSubResponse, IndexedCandidate, type Slot, type SubRequestShape } from './response-check.js';
import { firstInvalidUtf8 } from '../json/utf8.js';
import { agentDecisionSchema } from '../schemas.js';
import type { AgentDecision, AgentOutput } from '../types.js';

export type AnswerCheck =
  | { ok: true; slots: Slot<AgentOutput | IndexedCandidate>[][] }
  | { ok: false; reason: string };

/** Answers refused by the indexer up to this size are decoded for a reason in the schema's words. */
const TEXT_CHECK_MAX_BYTES = 1024 * 1024;

/**
 * The first half of the check, the one whose time grows with the answer: the UTF-8 check and the byte indexer.
 * Plain data in and out (offsets, no Buffer), so a large answer's index is built on the reader thread
 * (reader/reader.ts) and placed here. `skip`: the bytes of a UTF-8 byte order mark the indexer started after.
 * `decode`: a refusal small enough to be decoded for a reason in the schema's words (checkText).
 */
export type AnswerIndexOutcome =
  | { ok: true; skip: number; elements: AnswerElement[] }
  | { ok: false; skip: number; reason: string; decode: boolean };

/** Index `bytes` (a 2xx answer as received) for `asked` candidates; `maxDepth` is the replica's max_json_depth. */
export function indexAnswer(bytes: Uint8Array, asked: number, maxDepth: number, memoryKey: string): AnswerIndexOutcome {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Nothing a backend sends is altered: an answer that is not UTF-8 is not one (a UTF-8 byte order mark is dropped).
  const skip = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  const body = buf.subarray(skip);
  if (!isUtf8(body)) return { ok: false, skip, reason: `the answer is not valid UTF-8 (byte ${firstInvalidUtf8(body)})`, decode: false };
  // Room for a backend's duplicates and strays (their slots are judged one by one), not for millions of elements.
  const indexed = indexAgentResponse(body, maxDepth, memoryKey, 2 * asked + 16);
  if (indexed.ok) return { ok: true, skip, elements: indexed.elements };
  // A large answer refused whole is not decoded again for the reason's words: that decode would build an
  // object per element of whatever the backend sent (docs/memory-budget.md).
  const decode = body.length <= TEXT_CHECK_MAX_BYTES && !indexed.reject.reason.startsWith(TOO_MANY_ELEMENTS);
  return { ok: false, skip, reason: `the answer is not a valid AgentResponse: ${indexed.reject.reason} at byte ${indexed.reject.at}`, decode };
}

/** The candidates a sub-request asked for. */
export function askedOf(shape: SubRequestShape): number {
  let asked = 0;
  for (const inp of shape.inputs) asked += inp.count;
  return asked;
}

/** The second half: `bytes` placed by their index (`outcome`, from indexAnswer over the same bytes) onto `shape`. */
export function placeAnswer(bytes: Buffer, outcome: AnswerIndexOutcome, shape: SubRequestShape, maxDepth: number): AnswerCheck {
  const body = bytes.subarray(outcome.skip);
  if (!outcome.ok) return outcome.decode ? checkText(body.toString('utf8'), shape, maxDepth) : { ok: false, reason: outcome.reason };
  const check = checkIndexedResponse(body, outcome.elements, shape);
  return check.ok ? { ok: true, slots: check.slots } : { ok: false, reason: check.reason };
}

/** Check `bytes` (a 2xx answer as received) against `shape` in place (both halves on this thread). */
export function checkAnswerBytes(bytes: Buffer, shape: SubRequestShape, maxDepth: number, memoryKey: string): AnswerCheck {
  return placeAnswer(bytes, indexAnswer(bytes, askedOf(shape), maxDepth, memoryKey), shape, maxDepth);
}

/** The answer parsed exactly (after a depth check) and checked. */
function checkText(text: string, shape: SubRequestShape, maxDepth: number): AnswerCheck {
  if (exceedsDepth(text, maxDepth) !== -1) return { ok: false, reason: `the answer is ${tooDeepMessage(maxDepth)}` };
  let answer: unknown;
  try {
    const parsed = parseExact(text);
    if (parsed.nonFinite) return { ok: false, reason: 'the answer holds a non-finite number' };
    answer = parsed.value;
  } catch (err) {
    // parseExact throws only Error (SyntaxError or its own bound errors).
    return { ok: false, reason: `the answer is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  const check = checkSubResponse(answer, shape);
  return check.ok ? { ok: true, slots: check.slots } : { ok: false, reason: check.reason };
}

/** A checked candidate's status and decision; an indexed one decodes its `output` bytes only, nothing else. */
export function decisionOf(c: AgentOutput | IndexedCandidate): { completed: boolean; output: AgentDecision | null } {
  if (!(c instanceof IndexedCandidate)) return { completed: c.status === 'completed', output: c.output ?? null };
  const { buf, index } = c;
  const span = index.output;
  // The indexer proved the output a strict AgentDecision (answer-index.ts); the schema fills its defaults.
  const output = span === undefined ? null : agentDecisionSchema.parse(parseExact(buf.toString('utf8', span.start, span.end)).value);
  return { completed: index.status === 'completed', output };
}
