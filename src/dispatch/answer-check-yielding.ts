/**
 * A backend's answer checked without holding the event loop for its size (docs/memory-budget.md#yielding): a
 * large one is indexed on the reader thread, a small one in place.
 */
import { askedOf, checkAnswerBytes, placeAnswer, type AnswerCheck } from '../protocol/answer/answer-check.js';
import type { SubRequestShape } from '../protocol/answer/response-check.js';
import { OFFLOAD_BYTES, indexAnswerOffloaded } from '../reader/reader.js';

/** `bytes` is unusable afterwards when large: its memory went to the thread and came back as one Buffer. */
export async function checkAnswerYielding(bytes: Buffer, shape: SubRequestShape, maxDepth: number, memoryKey: string): Promise<AnswerCheck> {
  if (bytes.length <= OFFLOAD_BYTES) return checkAnswerBytes(bytes, shape, maxDepth, memoryKey);
  const { body, outcome } = await indexAnswerOffloaded(bytes, askedOf(shape), maxDepth, memoryKey);
  return placeAnswer(body, outcome, shape, maxDepth);
}
