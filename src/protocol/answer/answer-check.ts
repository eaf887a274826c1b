/** A backend's answer bytes checked against its sub-request (docs/protocol-fidelity.md#how-a-batch-is-read). */
import { isUtf8 } from 'node:buffer';
import { indexAgentResponse, TOO_MANY_ELEMENTS, type AnswerElement } from './answer-index.js';
import { parseExact } from '../json/exact-json.js';
import { exceedsDepth, tooDeepMessage } from '../json/json-depth.js';
import { checkIndexedResponse, readersDisagree, type IndexedCandidate, type Slot, type SubRequestShape } from './response-check.js';
import { firstInvalidUtf8 } from '../json/utf8.js';
import { agentDecisionSchema } from '../schemas.js';
import { MemoryKeyRepeats } from '../request/protocol-walker.js';
import type { AgentDecision } from '../types.js';

export type AnswerCheck =
  | { ok: true; slots: Slot<IndexedCandidate>[][] }
  | { ok: false; reason: string };

/** Answers refused by the indexer up to this size are decoded for a reason in the decoded reader's words. */
const TEXT_CHECK_MAX_BYTES = 1024 * 1024;

/** The half whose time grows with the answer, plain data so the reader thread can build it. */
export type AnswerIndexOutcome =
  | { ok: true; skip: number; elements: AnswerElement[] }
  | { ok: false; skip: number; reason: string; decode: boolean };

export function indexAnswer(bytes: Uint8Array, asked: number, maxDepth: number, memoryKey: string, maxKeyRepeats: number): AnswerIndexOutcome {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Nothing a backend sends is altered: an answer that is not UTF-8 is not one (a UTF-8 byte order mark is dropped).
  const skip = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  const body = buf.subarray(skip);
  if (!isUtf8(body)) return { ok: false, skip, reason: `the answer is not valid UTF-8 (byte ${firstInvalidUtf8(body)})`, decode: false };
  // Room for a backend's duplicates and strays (their slots are judged one by one), not for millions of elements.
  const indexed = indexAgentResponse(body, maxDepth, memoryKey, 2 * asked + 16, maxKeyRepeats);
  if (indexed.ok) return { ok: true, skip, elements: indexed.elements };
  const { reject } = indexed;
  // Decoded, the repeats collapse to one and the text check would pass what the bound refused.
  if (reject instanceof MemoryKeyRepeats) {
    return { ok: false, skip, reason: `the answer is not a valid AgentResponse: candidate [${reject.owner}]'s ${reject.reason} at byte ${reject.at}`, decode: false };
  }
  // A large refused answer is not decoded for the reason's words: that would build an object per element.
  const decode = body.length <= TEXT_CHECK_MAX_BYTES && !reject.reason.startsWith(TOO_MANY_ELEMENTS);
  return { ok: false, skip, reason: `the answer is not a valid AgentResponse: ${reject.reason} at byte ${reject.at}`, decode };
}

export function askedOf(shape: SubRequestShape): number {
  return shape.inputs.reduce((asked, inp) => asked + inp.count, 0);
}

export function placeAnswer(bytes: Buffer, outcome: AnswerIndexOutcome, shape: SubRequestShape, maxDepth: number): AnswerCheck {
  const body = bytes.subarray(outcome.skip);
  if (!outcome.ok) return { ok: false, reason: outcome.decode ? checkText(body.toString('utf8'), maxDepth, outcome.reason) : outcome.reason };
  const check = checkIndexedResponse(body, outcome.elements, shape);
  return check.ok ? { ok: true, slots: check.slots } : { ok: false, reason: check.reason };
}

export function checkAnswerBytes(bytes: Buffer, shape: SubRequestShape, maxDepth: number, memoryKey: string, maxKeyRepeats: number): AnswerCheck {
  return placeAnswer(bytes, indexAnswer(bytes, askedOf(shape), maxDepth, memoryKey, maxKeyRepeats), shape, maxDepth);
}

/**
 * Why the indexer refused the answer whole, in the decoded reader's words. Its refusals of an answer are JSON's
 * (syntax, depth, a number that overflows) or that it is not an array, which the decoder words too: a decoded
 * array is the readers disagreeing (`refused` is the indexer's reason).
 */
function checkText(text: string, maxDepth: number, refused: string): string {
  if (exceedsDepth(text, maxDepth) !== -1) return `the answer is ${tooDeepMessage(maxDepth)}`;
  try {
    const parsed = parseExact(text);
    if (parsed.nonFinite) return 'the answer holds a non-finite number';
    if (!Array.isArray(parsed.value)) return 'the answer is not a JSON array of AgentOutput';
  } catch (err) {
    // parseExact throws only Error (SyntaxError or its own bound errors).
    return `the answer is not JSON: ${err instanceof Error ? err.message : String(err)}`;
  }
  return `${readersDisagree('the answer')} (${refused})`;
}

/** Decodes the candidate's `output` bytes only. */
export function decisionOf(c: IndexedCandidate): { completed: boolean; output: AgentDecision | null } {
  const { buf, index } = c;
  const span = index.output;
  // The indexer proved the output a strict AgentDecision (answer-index.ts); the schema fills its defaults.
  const output = span === undefined ? null : agentDecisionSchema.parse(parseExact(buf.toString('utf8', span.start, span.end)).value);
  return { completed: index.status === 'completed', output };
}
