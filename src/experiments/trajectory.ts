/**
 * One step of a trajectory (docs/experiments.md#the-trajectory-in-the-tag): the trajectory members an input's
 * candidates carry, from the members the input arrived with and the input's instruction. Pure and deterministic,
 * so a replayed (request_id, input id) gives the same members on every replica.
 */
import { createHash } from 'node:crypto';
import { intKey } from '../protocol/json/exact-json.js';
import { MAX_LINES_PER_STEP, TAG_MAX_COUNT, withFlag, type TrajectoryState } from '../protocol/memory-tag.js';
import { parseEnvFeedback } from './feedback.js';
import { nextTraceHash, TRACE_HASH_SEED, traceRole } from './trace-hash.js';

/** The instruction of an input, as the recorder reads it. */
export interface StepInstruction {
  readonly type: 'user' | 'env';
  readonly content: string;
}

function hex32(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000'), 'utf8').digest('hex').slice(0, 32);
}

/**
 * The key of one (request_id, input id) under the config's salt: a new trajectory's id, and what the
 * recorder's step marks hold to tell a replay (same key) from a fork (another key).
 */
export function requestKey(salt: string, requestId: string, inputId: unknown): string {
  return hex32('request', salt, requestId, intKey(inputId));
}

/** The id of a trajectory forked from `parent` by the request with key `key`: deterministic, so replays agree. */
export function forkedId(parent: string, key: string): string {
  return hex32('fork', parent, key);
}

/**
 * Where a fork of `parent` starts (docs/experiments.md#forks): a new trajectory `id` with nothing counted yet,
 * so its unit holds only the steps after the fork, never the parent's history again. The trace hash, the
 * experiment, the stratum and the key go on: an outcome names the whole episode, and the fork shares the
 * parent's first input.
 */
export function forkStart(parent: TrajectoryState, id: string): TrajectoryState {
  return { ...parent, id, step: 0, s: 0, n: 0, stages: 0, flags: '' };
}

/** The tool outcomes an instruction reports: robot lines succeeded / reported, env error, failure reason. */
export interface StepFeedback {
  succeeded: number;
  lines: number;
  envError: boolean;
  failureReason: boolean;
}

/**
 * What one instruction adds to a trajectory's counters. At most MAX_LINES_PER_STEP robot lines per step (the
 * successes first), so the counters stay within what the tag check accepts (docs/experiments.md#signed-tags).
 */
export function stepFeedback(instruction: StepInstruction): StepFeedback {
  if (instruction.type !== 'env') return { succeeded: 0, lines: 0, envError: false, failureReason: false };
  const c = parseEnvFeedback(instruction.content);
  const succeeded = Math.min(MAX_LINES_PER_STEP, c.tool_succeeded);
  return {
    succeeded,
    lines: Math.min(MAX_LINES_PER_STEP, c.tool_succeeded + c.tool_failed),
    envError: c.env_error > 0,
    failureReason: c.failure_reason > 0,
  };
}

/**
 * The members after `instruction`: `previous` is what the input arrived with (or a fork's start), undefined for a
 * new trajectory (id `id`, in `experiment`, with its stratum and key). A `user` instruction after the first step
 * is a completed stage.
 */
export function advance(
  previous: TrajectoryState | undefined,
  start: { id: string; experiment: string; stratum?: number; key?: string },
  instruction: StepInstruction,
  feedback: StepFeedback,
): TrajectoryState {
  const p = previous ?? { ...start, step: 0, s: 0, n: 0, stages: 0, hash: TRACE_HASH_SEED, flags: '' };
  let next: TrajectoryState = {
    ...p, // the stratum and key decided at the first step travel unchanged
    step: Math.min(TAG_MAX_COUNT, p.step + 1),
    // Bounded like a tag read back: n never passes the bound and s never passes n.
    n: Math.min(TAG_MAX_COUNT, p.n + feedback.lines),
    s: Math.min(TAG_MAX_COUNT, p.n + feedback.lines, p.s + feedback.succeeded),
    stages: Math.min(TAG_MAX_COUNT, p.stages + (instruction.type === 'user' && p.step > 0 ? 1 : 0)),
    hash: nextTraceHash(p.hash, traceRole(instruction.type), instruction.content),
  };
  if (feedback.envError) next = withFlag(next, 'e');
  if (feedback.failureReason) next = withFlag(next, 'f');
  return next;
}
