/**
 * The gateway's memory tag (docs/routing.md#the-memory-key-and-stickiness; docs/experiments.md#the-trajectory-in-the-tag):
 * the one member `memory[memory_key]` the gateway writes into every candidate it returns and reads back from every
 * input. Everything that knows the tag's shape is here: reading it (from a decoded value, from an indexed body),
 * building it, writing it (as a value, as the bytes of a JSON member) and stripping it (from values, from bytes).
 * In the protocol layer, so the indexers, routing, dispatch, the cache and coaching all import it downward.
 *
 * Shape, in the order it is written:
 *   {"backend", "route", "arm"?,                                       where the candidate came from (stickiness)
 *    "trajectory", "experiment", "step", "s", "n", "stages", "hash", "flags",   on experiment routes only
 *    "stratum"?, "key"?,                                                 on stratified / assign_by experiments
 *    "replay"?, "sig"}                                                   a replay's original; the signature
 * What each trajectory member means is docs/experiments.md#the-trajectory-in-the-tag; the recorder needs them to
 * make its increments idempotent and to see forks. The tag stays small and bounded (about 300 bytes): every member
 * is a bounded number, a fixed-length hex string or a few flag letters. Signing (docs/experiments.md#signed-tags):
 * a TrajectoryState the recorder made carries the signer (which holds the secret) that signs it when written, and
 * planning checks a tag read back with the same signer (tagRejection).
 *
 * Memory comes from clients, so a damaged tag costs only what it carries: a tag whose trajectory members are
 * malformed is read without them (stickiness kept, the trajectory counted as a new one).
 */
import { parseExact } from './json/exact-json.js';
import { isJsonObject } from './schemas.js';
import type { JsonObject } from './types.js';

/**
 * Set-once facts about a trajectory, one letter each: `e` an env input carried an `error`, `f` a `failure_reason`,
 * `c` the gateway returned an error candidate for it, `x` a step was served by another backend than its arm, `r`
 * it began from a tag the gateway did not trust (docs/experiments.md#signed-tags): none of its steps is counted; `o`
 * it started after its experiment held experiments.max_trajectories and is left out (never counted nor stored).
 */
export type TrajectoryFlag = 'e' | 'f' | 'c' | 'x' | 'r' | 'o';
const FLAG_ORDER: readonly TrajectoryFlag[] = ['e', 'f', 'c', 'x', 'r', 'o'];

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
  /**
   * While every step so far came from the response cache as the same earlier trajectory's same step: that
   * trajectory's id (a replay, docs/experiments.md#replays-and-resumed-episodes). Dropped at the first live step.
   */
  readonly replay?: string;
  /** What signs the tag when it is written (set by the experiment recorder, which holds the secret; never read back). */
  readonly signer?: TagSigner;
}

/** Signs a tag's canonical text (experiments/tag-signer.ts): an HMAC under a secret every replica shares. */
export interface TagSigner {
  sign(text: string): string;
  /** Whether `sig` is the signature of `text` (a constant-time compare). */
  verify(text: string, sig: string): boolean;
}

/**
 * The gateway's entry in a candidate's memory. `arm` is the split arm the trajectory was assigned, kept when a
 * fallback produced the candidate, so A/B accounting follows the assignment.
 */
export interface MemoryTag {
  backend: string;
  route: string;
  arm?: string;
  trajectory?: TrajectoryState;
  /** The signature read back with a tag that has trajectory members (never set when building one). */
  sig?: string;
}

/** Bounds on the numbers a tag may carry: a client cannot make the counters jump by more than this per step. */
export const TAG_MAX_COUNT = 1_000_000_000;
/** A stratum slot a tag may carry: experiments.max_strata is at most this. */
const TAG_MAX_STRATUM = 1000;

const HEX32 = /^[0-9a-f]{32}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const EXPERIMENT_ID = /^[0-9a-f]{1,32}$/;
const FLAGS = /^e?f?c?x?r?o?$/;
/** A signature: 16 bytes of HMAC-SHA256, base64url (22 characters). */
const SIG = /^[A-Za-z0-9_-]{22}$/;

/**
 * Robot lines one env input may add to a trajectory's counters (experiments/trajectory.ts caps a step's lines at
 * it): what makes "counters no step could have produced" checkable from the tag alone.
 */
export const MAX_LINES_PER_STEP = 64;

// --- reading a tag from values -------------------------------------------------------------------------------

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
    ...(typeof raw.replay === 'string' && HEX32.test(raw.replay) ? { replay: raw.replay } : {}),
  };
}

/** The tag a decoded value holds, or undefined when it is not one. */
function tagOfValue(raw: unknown): MemoryTag | undefined {
  if (!isJsonObject(raw) || typeof raw.backend !== 'string' || raw.backend === '' || typeof raw.route !== 'string') {
    return undefined;
  }
  const tag: MemoryTag = { backend: raw.backend, route: raw.route };
  if (typeof raw.arm === 'string') tag.arm = raw.arm;
  const trajectory = trajectoryOf(raw);
  if (trajectory !== undefined) tag.trajectory = trajectory;
  if (typeof raw.sig === 'string' && SIG.test(raw.sig)) tag.sig = raw.sig;
  return tag;
}

// --- trusting a tag -------------------------------------------------------------------------------------------

/** Why a tag read back is not trusted (docs/experiments.md#signed-tags): counted as `rejected_tags`. */
export type TagRejection = 'unsigned' | 'signature' | 'counters';

/**
 * The text a tag's signature covers: the route and arm (so a client cannot move a trajectory between arms) and
 * every trajectory member. The backend is left out: a fallback legitimately changes it.
 */
export function signedText(route: string, arm: string | undefined, t: TrajectoryState): string {
  return JSON.stringify([route, arm ?? null, t.id, t.experiment, t.step, t.s, t.n, t.stages, t.hash, t.flags, t.stratum ?? null, t.key ?? null, t.replay ?? null]);
}

/**
 * Counters one step at a time could have produced: each step adds at most MAX_LINES_PER_STEP robot lines and
 * one stage. A tag past these was not written by the gateway, whatever its signature says.
 */
export function countersPossible(t: TrajectoryState): boolean {
  return t.s <= t.n && t.n <= t.step * MAX_LINES_PER_STEP && t.stages <= t.step;
}

/**
 * Whether a tag read back may be continued: undefined when it may (or carries nothing to trust: no trajectory
 * and no arm), else why not. Pure; the signer holds the secret.
 */
export function tagRejection(tag: MemoryTag, signer: TagSigner): TagRejection | undefined {
  const t = tag.trajectory;
  if (t === undefined) return tag.arm === undefined ? undefined : 'unsigned';
  if (tag.sig === undefined) return 'unsigned';
  if (!signer.verify(signedText(tag.route, tag.arm, t), tag.sig)) return 'signature';
  return countersPossible(t) ? undefined : 'counters';
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
 * The tag of an input (routing/routing-input.ts RoutingInput). One read by the indexer has its tag member located
 * in its bytes: only that member is decoded, never the rest of the memory (docs/protocol-fidelity.md#how-a-batch-is-read).
 */
export function inputMemoryTag(input: { memoryMember(key: string): unknown }, memoryKey: string): MemoryTag | undefined {
  return tagOfValue(input.memoryMember(memoryKey));
}

// --- building a tag -------------------------------------------------------------------------------------------

/** Where a candidate comes from: a dispatch item (dispatch/batch-item.ts Item) is one. */
interface CandidateSource {
  readonly backend: string;
  readonly route: string;
  readonly arm?: string | undefined;
  readonly trajectory?: TrajectoryState | undefined;
}

/** The tag of a candidate produced by `backend` for a trajectory of `route` (assigned `arm`, if any). */
export function candidateTagOf(from: CandidateSource): MemoryTag {
  const { backend, route, arm, trajectory } = from;
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

/** A cache key for a tag: equal keys, equal bytes. */
function tagKey(tag: MemoryTag): string {
  const t = tag.trajectory;
  const traj = t === undefined ? '' : `${t.id}\u0000${t.experiment}\u0000${t.step}\u0000${t.s}\u0000${t.n}\u0000${t.stages}\u0000${t.hash}\u0000${t.flags}\u0000${t.stratum ?? ''}\u0000${t.key ?? ''}\u0000${t.replay ?? ''}`;
  return `${tag.backend}\u0000${tag.route}\u0000${tag.arm ?? ''}\u0000${tag.arm === undefined ? 0 : 1}\u0000${traj}`;
}

function sameTag(a: MemoryTag, b: MemoryTag): boolean {
  return tagKey(a) === tagKey(b);
}

// --- writing and stripping it in values -----------------------------------------------------------------------

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
    if (t.replay !== undefined) v.replay = t.replay;
    if (t.signer !== undefined) v.sig = t.signer.sign(signedText(tag.route, tag.arm, t));
  }
  return v;
}

/** memory without the gateway's key, the same object when the key is absent (the common case: no copy). */
export function stripMemoryKey(memory: JsonObject, key: string): JsonObject {
  if (!Object.prototype.hasOwnProperty.call(memory, key)) return memory;
  // Rest-spread defines own data properties, so a "__proto__" key in memory stays ordinary data.
  const { [key]: _dropped, ...rest } = memory;
  return rest;
}

/** memory with the tag as its `key` member (replacing one there, in its place): a backend's candidate. */
export function tagMemory(memory: JsonObject, key: string, tag: MemoryTag): JsonObject {
  // A computed key in a literal defines an own property, even for "__proto__".
  return { ...memory, [key]: tagValue(tag) };
}

/**
 * An input's memory as an error candidate carries it: the old tag cut, the tag last. Built once per (memory, tag)
 * and shared by every error candidate of that input: 1000 error candidates of a 5,000-key memory would otherwise
 * copy 5 million properties, seconds of event loop during which no other client is served. Candidates are only
 * serialized, never mutated, so sharing is safe. A WeakMap, which a young-generation GC treats as live, is
 * acceptable here only because it serves memory already decoded (docs/performance.md#batches-die-young).
 */
const taggedInputs = new WeakMap<JsonObject, { key: string; tag: MemoryTag; memory: JsonObject }>();

export function taggedInputMemory(memory: JsonObject, key: string, tag: MemoryTag): JsonObject {
  const hit = taggedInputs.get(memory);
  if (hit !== undefined && hit.key === key && sameTag(hit.tag, tag)) return hit.memory;
  const tagged = tagMemory(stripMemoryKey(memory, key), key, tag);
  taggedInputs.set(memory, { key, tag, memory: tagged });
  return tagged;
}

/**
 * Remove the gateway's key from every `memory` object anywhere in a decoded coaching body, in place (backends never
 * see it; a trajectory carries it on each step's input and possibly on outputs). Iterative, so a deeply nested body
 * cannot overflow the stack. Returns how many tags were removed (for the log line).
 */
export function stripGatewayTags(root: unknown, memoryKey: string): number {
  let stripped = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === 'object') stack.push(x);
    } else if (isJsonObject(v)) {
      for (const [k, child] of Object.entries(v)) {
        if (k === 'memory' && isJsonObject(child) && Object.hasOwn(child, memoryKey)) {
          delete child[memoryKey];
          stripped++;
        }
        if (child !== null && typeof child === 'object') stack.push(child);
      }
    }
  }
  return stripped;
}

// --- the tag in bytes -----------------------------------------------------------------------------------------

/** A top-level member of memory named memory_key, with its neighbours' edges (for cutting it out). */
export interface TagSpan {
  readonly keyStart: number;
  readonly valueStart: number;
  readonly valueEnd: number;
  /** valueEnd of the member before it, -1 when it is the first. */
  readonly prevEnd: number;
  /** keyStart of the member after it, -1 when it is the last. */
  nextStart: number;
}

/**
 * A memory object as the indexers (request-index.ts, answer-index.ts) lay it out for the functions here: its
 * edges and where the gateway's key already is.
 */
export interface MemoryLayout {
  readonly start: number;
  readonly end: number;
  readonly count: number;
  /** keyStart of the first member, valueEnd of the last (meaningless when count is 0). */
  readonly firstKeyStart: number;
  readonly lastValueEnd: number;
  readonly tags: readonly TagSpan[];
}

/** What the byte functions read of an input read by the indexer (request/raw-json.ts InputSlices). */
interface IndexedMemory {
  readonly buf: Buffer;
  readonly index: { readonly memoryLayout: MemoryLayout | undefined };
  readonly memory: { bytes(): Buffer };
}

const NO_MEMORY: MemoryLayout = { start: 0, end: 0, count: 0, firstKeyStart: -1, lastValueEnd: -1, tags: [] };

/** An input's memory in the layout taggedMemory reads; `{}` when the client sent none. */
export function inputMemoryLayout(raw: IndexedMemory): MemoryLayout {
  return raw.index.memoryLayout ?? NO_MEMORY;
}

/** The decoded value of memory's tag member (the last one, as JSON.parse keeps), or undefined when there is none. */
export function memoryTagValue(raw: IndexedMemory): unknown {
  const tags = raw.index.memoryLayout?.tags;
  const last = tags?.[tags.length - 1];
  if (last === undefined) return undefined;
  return parseExact(raw.buf.toString('utf8', last.valueStart, last.valueEnd)).value;
}

/**
 * Memory's bytes without the gateway's tag member(s), as pieces of the body: everything else exactly as sent,
 * the whitespace and separators of the remaining members included. One piece when there is no tag.
 */
export function memoryWithoutTag(raw: IndexedMemory): Buffer[] {
  const m = raw.index.memoryLayout;
  if (m === undefined || m.tags.length === 0) return [raw.memory.bytes()];
  const buf = raw.buf;
  // Runs of kept members between the tags; a run followed by another keeps the separator after it (up to the
  // key of the tag that follows it), the last one ends with its last value.
  const runs: { start: number; end: number; sepEnd: number }[] = [];
  let runStart = m.firstKeyStart;
  for (const t of m.tags) {
    if (t.prevEnd !== -1 && runStart !== -1 && runStart !== t.keyStart) runs.push({ start: runStart, end: t.prevEnd, sepEnd: t.keyStart });
    runStart = t.nextStart;
  }
  if (runStart !== -1) runs.push({ start: runStart, end: m.lastValueEnd, sepEnd: m.lastValueEnd });
  const pieces: Buffer[] = [buf.subarray(m.start, m.firstKeyStart)];
  runs.forEach((r, i) => pieces.push(buf.subarray(r.start, i < runs.length - 1 ? r.sepEnd : r.end)));
  pieces.push(buf.subarray(m.lastValueEnd, m.end));
  return pieces;
}

/** The tag as the bytes of a JSON object member, `"<memory_key>":{...}`, for answers written as bytes. */
function tagMemberBytes(memoryKey: string, tag: MemoryTag): Buffer {
  return Buffer.from(`${JSON.stringify(memoryKey)}:${JSON.stringify(tagValue(tag))}`, 'utf8');
}

/**
 * Tag members per memory key and tagKey, kept across batches: their parts are config names (backend, route, arm),
 * so there are as many as the config can route to, and every batch needs them.
 */
const tagMembers = new Map<string, Map<string, Buffer>>();
/** A bound in case names ever stop being the config's: past it a member is built per batch. */
const MAX_TAG_MEMBERS = 4096;

/** The tag's member bytes (tagMemberBytes) and its tagKey, the member shared when the tag has no trajectory. */
export function tagMember(memoryKey: string, tag: MemoryTag): { key: string; bytes: Buffer } {
  const key = tagKey(tag);
  // A tag with trajectory members is one input's own: caching it across batches would only fill the map.
  if (tag.trajectory !== undefined) return { key, bytes: tagMemberBytes(memoryKey, tag) };
  let members = tagMembers.get(memoryKey);
  if (members === undefined) tagMembers.set(memoryKey, (members = new Map()));
  let bytes = members.get(key);
  if (bytes === undefined) {
    bytes = tagMemberBytes(memoryKey, tag);
    if (members.size < MAX_TAG_MEMBERS) members.set(key, bytes);
  }
  return { key, bytes };
}

const OPEN = Buffer.from('{', 'latin1');
const CLOSE = Buffer.from('}', 'latin1');
const COMMA = Buffer.from(',', 'latin1');

/**
 * A memory object's bytes with the tag member `tagMember` (tagMember().bytes), everything else as in `buf`, as
 * pieces appended to `out`. `replace`: the tag takes the place of the first member already named memory_key (a
 * backend candidate, as tagMemory does); otherwise every such member is cut and the tag goes last (an input's
 * memory on an error candidate, as taggedInputMemory does).
 */
export function taggedMemory(buf: Buffer, m: MemoryLayout, tagMember: Buffer, replace: boolean, out: Buffer[]): void {
  if (m.count === 0) {
    out.push(OPEN, tagMember, CLOSE);
    return;
  }
  out.push(buf.subarray(m.start, m.firstKeyStart));
  if (m.tags.length === 0) {
    out.push(buf.subarray(m.firstKeyStart, m.lastValueEnd), COMMA, tagMember, buf.subarray(m.lastValueEnd, m.end));
    return;
  }
  // Runs of kept members between the tag members, each written whole (its own separators included).
  let first = true;
  const segment = (b: Buffer): void => {
    if (!first) out.push(COMMA);
    out.push(b);
    first = false;
  };
  let runStart = m.firstKeyStart;
  m.tags.forEach((t, i) => {
    if (t.prevEnd !== -1 && runStart !== t.keyStart) segment(buf.subarray(runStart, t.prevEnd));
    if (replace && i === 0) segment(tagMember);
    runStart = t.nextStart;
  });
  if (runStart !== -1) segment(buf.subarray(runStart, m.lastValueEnd));
  if (!replace) segment(tagMember);
  out.push(buf.subarray(m.lastValueEnd, m.end));
}
