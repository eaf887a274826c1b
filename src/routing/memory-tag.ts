/**
 * The gateway's memory tag (docs/routing.md#the-memory-key-and-stickiness; docs/experiments.md, "The
 * trajectory in the tag"): the one member `memory[memory_key]` the gateway writes into every candidate it returns
 * and reads back from every input. Reading (from a decoded value or from an indexed body), writing (as a value or
 * as the bytes of a JSON member) and stripping it all live here, so the tag's shape is decided in one place.
 *
 * Shape, in the order it is written:
 *   {"backend", "route", "arm"?,                                       where the candidate came from (stickiness)
 *    "trajectory", "experiment", "step", "s", "n", "stages", "hash", "flags",   on experiment routes only
 *    "stratum"?, "key"?}                                                 on stratified / assign_by experiments
 * The trajectory members are what the experiment recorder needs to make its increments idempotent and to see forks:
 * the trajectory's id (what outcomes name), the experiment it was assigned in, how many steps it had, its running
 * tool-success sums (s robot lines succeeded of n), the stages completed, the running hash of the instructions it
 * received (what `outcomes import` joins BENCH episodes by) and set-once flags. The tag stays small and bounded
 * (about 250 bytes): every member is a bounded number, a fixed-length hex string or a few flag letters.
 *
 * Memory comes from clients, so a damaged tag costs only what it carries: a tag whose trajectory members are
 * malformed is read without them (stickiness kept, the trajectory counted as a new one).
 */
import type { JsonObject } from '../protocol/types.js';
import { isJsonObject } from '../protocol/schemas.js';
import type { RoutingInput } from './routing-input.js';

/**
 * Set-once facts about a trajectory, one letter each: `e` an env input carried an `error`, `f` a `failure_reason`,
 * `c` the gateway returned an error candidate for it, `x` a step was served by another backend than its arm.
 */
export type TrajectoryFlag = 'e' | 'f' | 'c' | 'x';
const FLAG_ORDER: readonly TrajectoryFlag[] = ['e', 'f', 'c', 'x'];

/** The experiment members of a tag (docs/experiments.md#the-trajectory-in-the-tag). */
export interface TrajectoryState {
  /** 32 lowercase hex digits: what `POST /gateway/experiments/outcomes` names. */
  readonly id: string;
  /** The experiment the trajectory was assigned in (hex): its increments go to that experiment's counters. */
  readonly experiment: string;
  /** Inputs of the trajectory so far, this one included (1 for its first). */
  readonly step: number;
  /** Robot lines that succeeded, and robot lines reported, over the trajectory's env inputs. */
  readonly s: number;
  readonly n: number;
  /** `user` instructions after the first: stages the environment saw completed. */
  readonly stages: number;
  /** 64 hex digits: the running hash of the instructions received (experiments/trace-hash.ts). */
  readonly hash: string;
  /** Letters of TrajectoryFlag, in FLAG_ORDER, each at most once. */
  readonly flags: string;
  /** The stratum slot decided at the first step (0 = other), on a stratified experiment. */
  readonly stratum?: number;
  /** 16 hex digits: the assign_by key the trajectory's unit is, when the key is a unit of its own. */
  readonly key?: string;
}

/** A stratum slot a tag may carry: experiments.max_strata is at most this. */
const TAG_MAX_STRATUM = 1000;

/**
 * The gateway's entry in a candidate's memory. `arm` is the split arm the trajectory was assigned, kept when a
 * fallback produced the candidate, so A/B accounting follows the assignment.
 */
export interface MemoryTag {
  backend: string;
  route: string;
  arm?: string;
  trajectory?: TrajectoryState;
}

/** Bounds on the numbers a tag may carry: a client cannot make the counters jump by more than this per step. */
export const TAG_MAX_COUNT = 1_000_000_000;

const HEX32 = /^[0-9a-f]{32}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const EXPERIMENT_ID = /^[0-9a-f]{1,32}$/;
const FLAGS = /^e?f?c?x?$/;

function count(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= TAG_MAX_COUNT;
}

function trajectoryOf(raw: JsonObject): TrajectoryState | undefined {
  const { trajectory: id, experiment, step, s, n, stages, hash, flags } = raw;
  if (typeof id !== 'string' || !HEX32.test(id)) return undefined;
  if (typeof experiment !== 'string' || !EXPERIMENT_ID.test(experiment)) return undefined;
  if (!count(step, 1) || !count(s, 0) || !count(n, 0) || s > n || !count(stages, 0)) return undefined;
  if (typeof hash !== 'string' || !HEX64.test(hash)) return undefined;
  if (typeof flags !== 'string' || !FLAGS.test(flags)) return undefined;
  // Optional members: a malformed one is dropped alone (the unit then counts outside strata, or per trajectory).
  const { stratum, key } = raw;
  return {
    id, experiment, step, s, n, stages, hash, flags,
    ...(typeof stratum === 'number' && Number.isInteger(stratum) && stratum >= 0 && stratum <= TAG_MAX_STRATUM ? { stratum } : {}),
    ...(typeof key === 'string' && HEX16.test(key) ? { key } : {}),
  };
}

/** The tag a decoded value holds, or undefined when it is not one. */
export function tagOfValue(raw: unknown): MemoryTag | undefined {
  if (!isJsonObject(raw) || typeof raw.backend !== 'string' || raw.backend === '' || typeof raw.route !== 'string') {
    return undefined;
  }
  const tag: MemoryTag = { backend: raw.backend, route: raw.route };
  if (typeof raw.arm === 'string') tag.arm = raw.arm;
  const trajectory = trajectoryOf(raw);
  if (trajectory !== undefined) tag.trajectory = trajectory;
  return tag;
}

/**
 * The tag in `memory`, or undefined when absent or malformed: memory comes from clients, and a damaged tag must
 * only cost stickiness, never the request.
 */
export function readMemoryTag(memory: JsonObject, memoryKey: string): MemoryTag | undefined {
  if (!isJsonObject(memory) || !Object.hasOwn(memory, memoryKey)) return undefined;
  return tagOfValue(memory[memoryKey]);
}

/**
 * The tag of an input. One read by the indexer has its tag member located in its bytes: only that member is
 * decoded, never the rest of the memory (docs/protocol-fidelity.md#how-a-batch-is-read).
 */
export function inputMemoryTag(input: RoutingInput, memoryKey: string): MemoryTag | undefined {
  return tagOfValue(input.memoryMember(memoryKey));
}

/** The tag of a candidate produced by `backend` for a trajectory of `route` (assigned `arm`, if any). */
export function candidateTagOf(backend: string, route: string, arm: string | undefined, trajectory: TrajectoryState | undefined): MemoryTag {
  const tag: MemoryTag = { backend, route };
  if (arm !== undefined) tag.arm = arm;
  if (trajectory !== undefined) {
    // A step served by another backend than the trajectory's split arm is a crossover (docs/experiments.md).
    tag.trajectory = arm !== undefined && backend !== arm ? withFlag(trajectory, 'x') : trajectory;
  }
  return tag;
}

/** The same tag with `flag` set in its trajectory (the tag itself when it has no trajectory or the flag is set). */
export function tagWithFlag(tag: MemoryTag, flag: TrajectoryFlag): MemoryTag {
  if (tag.trajectory === undefined || tag.trajectory.flags.includes(flag)) return tag;
  return { ...tag, trajectory: withFlag(tag.trajectory, flag) };
}

export function withFlag(t: TrajectoryState, flag: TrajectoryFlag): TrajectoryState {
  if (t.flags.includes(flag)) return t;
  return { ...t, flags: FLAG_ORDER.filter((f) => f === flag || t.flags.includes(f)).join('') };
}

export function hasFlag(t: TrajectoryState | undefined, flag: TrajectoryFlag): boolean {
  return t !== undefined && t.flags.includes(flag);
}

/** The tag as the JSON value written into memory: members in the documented order, absent ones left out. */
export function tagValue(tag: MemoryTag): JsonObject {
  const v: JsonObject = { backend: tag.backend, route: tag.route };
  if (tag.arm !== undefined) v.arm = tag.arm;
  const t = tag.trajectory;
  if (t !== undefined) {
    v.trajectory = t.id;
    v.experiment = t.experiment;
    v.step = t.step;
    v.s = t.s;
    v.n = t.n;
    v.stages = t.stages;
    v.hash = t.hash;
    v.flags = t.flags;
    if (t.stratum !== undefined) v.stratum = t.stratum;
    if (t.key !== undefined) v.key = t.key;
  }
  return v;
}

/** A cache key for a tag: equal keys, equal bytes. */
export function tagKey(tag: MemoryTag): string {
  const t = tag.trajectory;
  const traj = t === undefined ? '' : `${t.id}\u0000${t.experiment}\u0000${t.step}\u0000${t.s}\u0000${t.n}\u0000${t.stages}\u0000${t.hash}\u0000${t.flags}\u0000${t.stratum ?? ''}\u0000${t.key ?? ''}`;
  return `${tag.backend}\u0000${tag.route}\u0000${tag.arm ?? ''}\u0000${tag.arm === undefined ? 0 : 1}\u0000${traj}`;
}

export function sameTag(a: MemoryTag, b: MemoryTag): boolean {
  return tagKey(a) === tagKey(b);
}

/** The tag as the bytes of a JSON object member, `"<memory_key>":{...}`, for answers written as bytes. */
export function tagMemberBytes(memoryKey: string, tag: MemoryTag): Buffer {
  return Buffer.from(`${JSON.stringify(memoryKey)}:${JSON.stringify(tagValue(tag))}`, 'utf8');
}

/** memory without the gateway's key, the same object when the key is absent (the common case: no copy). */
export function stripMemoryKey(memory: JsonObject, key: string): JsonObject {
  if (!Object.prototype.hasOwnProperty.call(memory, key)) return memory;
  // Rest-spread defines own data properties, so a "__proto__" key in memory stays ordinary data.
  const { [key]: _dropped, ...rest } = memory;
  return rest;
}

/** memory with the tag as its `key` member (replacing one there). */
export function tagMemory(memory: JsonObject, key: string, tag: MemoryTag): JsonObject {
  // A computed key in a literal defines an own property, even for "__proto__".
  return { ...memory, [key]: tagValue(tag) };
}
