/** One step's tag members; pure, so a replayed (request_id, input id) gives the same members on every replica. */
import { createHash } from 'node:crypto';
import { intKey } from '../protocol/json/exact-json.js';
import { MAX_LINES_PER_STEP, TAG_MAX_COUNT, withFlag, type TrajectoryState } from '../protocol/memory-tag.js';
import { parseEnvFeedback } from './feedback.js';
import { nextTraceHash, TRACE_HASH_SEED, traceRole } from './trace-hash.js';

export interface StepInstruction {
  readonly type: 'user' | 'env';
  readonly content: string;
}

function hex32(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000'), 'utf8').digest('hex').slice(0, 32);
}

/** A new trajectory's id, and what the step marks hold to tell a replay (same key) from a fork (another key). */
export function requestKey(salt: string, requestId: string, inputId: unknown): string {
  return hex32('request', salt, requestId, intKey(inputId));
}

export function forkedId(parent: string, key: string): string {
  return hex32('fork', parent, key);
}

/** A fork's unit counts only what follows it; the trace hash, stratum and key go on: an outcome names the episode. */
export function forkStart(parent: TrajectoryState, id: string): TrajectoryState {
  return Object.assign({}, parent, { id, step: 0, s: 0, n: 0, stages: 0, flags: '' });
}

export interface StepFeedback {
  succeeded: number;
  lines: number;
  envError: boolean;
  failureReason: boolean;
}

/** At most MAX_LINES_PER_STEP robot lines (successes first), so the counters stay within what the tag check accepts. */
export function stepFeedback(instruction: StepInstruction): StepFeedback {
  if (instruction.type !== 'env') return { succeeded: 0, lines: 0, envError: false, failureReason: false };
  const c = parseEnvFeedback(instruction.content);
  return {
    succeeded: Math.min(MAX_LINES_PER_STEP, c.tool_succeeded),
    lines: Math.min(MAX_LINES_PER_STEP, c.tool_succeeded + c.tool_failed),
    envError: c.env_error > 0,
    failureReason: c.failure_reason > 0,
  };
}

/** `previous` undefined: a new trajectory. A `user` instruction after the first step is a completed stage. */
export function advance(
  previous: TrajectoryState | undefined,
  start: { id: string; experiment: string; stratum?: number; key?: string },
  instruction: StepInstruction,
  feedback: StepFeedback,
): TrajectoryState {
  const p = previous ?? Object.assign({}, start, { step: 0, s: 0, n: 0, stages: 0, hash: TRACE_HASH_SEED, flags: '' });
  let next: TrajectoryState = Object.assign({}, p, {
    step: Math.min(TAG_MAX_COUNT, p.step + 1),
    // Bounded like a tag read back: n never passes the bound and s never passes n.
    n: Math.min(TAG_MAX_COUNT, p.n + feedback.lines),
    s: Math.min(TAG_MAX_COUNT, p.n + feedback.lines, p.s + feedback.succeeded),
    stages: Math.min(TAG_MAX_COUNT, p.stages + (instruction.type === 'user' && p.step > 0 ? 1 : 0)),
    hash: nextTraceHash(p.hash, traceRole(instruction.type), instruction.content),
  });
  if (feedback.envError) next = withFlag(next, 'e');
  if (feedback.failureReason) next = withFlag(next, 'f');
  return next;
}
