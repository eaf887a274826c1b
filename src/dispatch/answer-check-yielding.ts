/**
 * A backend's answer checked without holding the event loop for its size (docs/memory-budget.md#yielding): a
 * large one is indexed on the reader thread (reader/reader.ts), a small one in place, and both placed here by
 * the same code (protocol/answer/answer-check.ts), so primary and shadow answers are judged alike.
 */
import { askedOf, checkAnswerBytes, placeAnswer, type AnswerCheck } from '../protocol/answer/answer-check.js';
import type { SubRequestShape } from '../protocol/answer/response-check.js';
import { indexAnswerOffloaded } from '../reader/reader.js';
import { LARGE_BODY_BYTES } from '../protocol/body-bytes.js';

/**
 * Check `bytes` (a 2xx answer as received; unusable afterwards when large: its memory went to the thread, which
 * joins it when it came as chunks, and came back as one Buffer).
 */
export async function checkAnswerYielding(bytes: Buffer, shape: SubRequestShape, maxDepth: number, memoryKey: string): Promise<AnswerCheck> {
  if (bytes.length <= LARGE_BODY_BYTES) return checkAnswerBytes(bytes, shape, maxDepth, memoryKey);
  const { body, outcome } = await indexAnswerOffloaded(bytes, askedOf(shape), maxDepth, memoryKey);
  return placeAnswer(body, outcome, shape, maxDepth);
}
