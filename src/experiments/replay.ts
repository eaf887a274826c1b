/** Which unit a step the response cache answers belongs to (docs/experiments.md#replays-and-resumed-episodes). */
import type { TrajectoryState } from '../protocol/memory-tag.js';

export interface CacheHit {
  readonly backend: string;
  readonly arm?: string;
  readonly by?: { readonly t: string; readonly k: number; readonly x: string };
}

export type ReplayStep =
  | { kind: 'live' }
  /** Not counted. */
  | { kind: 'replay'; of: string }
  /** The replay of `of` (its first `replayed` steps) ended here; `next` produced this step's hit, if one did. */
  | { kind: 'ended'; of: string; replayed: number; next?: string };

/** A hit replays only the same step of a trajectory of the same experiment: a reset starts clean. */
export function replayStep(previous: TrajectoryState | undefined, experiment: string, hit: CacheHit | undefined): ReplayStep {
  const step = (previous?.step ?? 0) + 1;
  const by = hit?.by;
  const producer = by !== undefined && by.x === experiment && by.k === step ? by.t : undefined;
  if (previous === undefined) return producer === undefined ? { kind: 'live' } : { kind: 'replay', of: producer };
  const of = previous.replay;
  if (of === undefined || previous.experiment !== experiment) return { kind: 'live' };
  if (producer === of) return { kind: 'replay', of };
  return { kind: 'ended', of, replayed: previous.step, ...(producer === undefined ? {} : { next: producer }) };
}

/** `supersede`: the original stopped where the replay did, so the replaying trajectory takes its unit over. */
export function endOfReplay(ended: { replayed: number; next?: string }, successor: string | undefined, lastStep: number): 'continue' | 'supersede' | 'diverge' {
  if (successor !== undefined && ended.next === successor) return 'continue';
  if (successor !== undefined) return 'diverge';
  return lastStep <= ended.replayed ? 'supersede' : 'diverge';
}

/** Of a step set (`<step>|...` members, step-index.ts); 0 when empty. */
export function lastStepOf(members: readonly string[]): number {
  let last = 0;
  for (const m of members) {
    const step = Number(m.split('|', 1)[0]);
    if (Number.isInteger(step) && step > last) last = step;
  }
  return last;
}
