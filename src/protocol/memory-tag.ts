/**
 * The memory tag `memory[memory_key]` as values and as bytes (docs/routing.md#the-memory-key-and-stickiness,
 * docs/experiments.md#the-trajectory-in-the-tag). Malformed trajectory members are dropped: stickiness kept.
 */
import { parseExact } from './json/exact-json.js';
import { isJsonObject } from './schemas.js';
import type { JsonObject } from './types.js';

export type TrajectoryFlag = 'e' | 'f' | 'c' | 'x' | 'r' | 'o';
const FLAG_ORDER: readonly TrajectoryFlag[] = ['e', 'f', 'c', 'x', 'r', 'o'];

export interface TrajectoryState {
  readonly id: string;
  readonly experiment: string;
  readonly step: number;
  readonly s: number;
  readonly n: number;
  readonly stages: number;
  readonly hash: string;
  /** In FLAG_ORDER, each at most once. */
  readonly flags: string;
  readonly stratum?: number;
  readonly key?: string;
  /** The trajectory this one replays from the response cache; dropped at the first live step. */
  readonly replay?: string;
  /** Set by the experiment recorder, which holds the secret; never read back. */
  readonly signer?: TagSigner;
}

export interface TagSigner {
  sign(text: string): string;
  verify(text: string, sig: string): boolean;
}

/** `arm` is the split arm assigned, kept when a fallback produced the candidate, so A/B accounting follows it. */
export interface MemoryTag {
  backend: string;
  route: string;
  arm?: string;
  trajectory?: TrajectoryState;
  /** Only read back, never set when building. */
  sig?: string;
}

/** A client cannot make the counters jump by more than this per step. */
export const TAG_MAX_COUNT = 1_000_000_000;
const TAG_MAX_STRATUM = 1000;

const HEX32 = /^[0-9a-f]{32}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const HEX16 = /^[0-9a-f]{16}$/;
const EXPERIMENT_ID = /^[0-9a-f]{1,32}$/;
const FLAGS = /^e?f?c?x?r?o?$/;
const SIG = /^[A-Za-z0-9_-]{22}$/;

/** Robot lines one step may add (experiments/trajectory.ts caps at it): makes countersPossible checkable. */
export const MAX_LINES_PER_STEP = 64;

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
  // A malformed optional member is dropped alone (the unit then counts outside strata, or per trajectory).
  const { stratum, key } = raw;
  return {
    id, experiment, step, s, n, stages, hash, flags,
    ...(typeof stratum === 'number' && Number.isInteger(stratum) && stratum >= 0 && stratum <= TAG_MAX_STRATUM ? { stratum } : {}),
    ...(typeof key === 'string' && HEX16.test(key) ? { key } : {}),
    ...(typeof raw.replay === 'string' && HEX32.test(raw.replay) ? { replay: raw.replay } : {}),
  };
}

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

export type TagRejection = 'unsigned' | 'signature' | 'counters';

/** What a signature covers: not the backend, which a fallback legitimately changes. */
export function signedText(route: string, arm: string | undefined, t: TrajectoryState): string {
  return JSON.stringify([route, arm ?? null, t.id, t.experiment, t.step, t.s, t.n, t.stages, t.hash, t.flags, t.stratum ?? null, t.key ?? null, t.replay ?? null]);
}

/** Counters steps could have produced; a tag past them was not written by the gateway, whatever its signature. */
export function countersPossible(t: TrajectoryState): boolean {
  return t.s <= t.n && t.n <= t.step * MAX_LINES_PER_STEP && t.stages <= t.step;
}

export function tagRejection(tag: MemoryTag, signer: TagSigner): TagRejection | undefined {
  const t = tag.trajectory;
  if (t === undefined) return tag.arm === undefined ? undefined : 'unsigned';
  if (tag.sig === undefined) return 'unsigned';
  if (!signer.verify(signedText(tag.route, tag.arm, t), tag.sig)) return 'signature';
  return countersPossible(t) ? undefined : 'counters';
}

/** Undefined when absent or malformed: a damaged tag costs stickiness, never the request. */
export function readMemoryTag(memory: JsonObject, memoryKey: string): MemoryTag | undefined {
  if (!isJsonObject(memory) || !Object.hasOwn(memory, memoryKey)) return undefined;
  return tagOfValue(memory[memoryKey]);
}

export function inputMemoryTag(input: { member(of: 'memory', key: string): unknown }, memoryKey: string): MemoryTag | undefined {
  return tagOfValue(input.member('memory', memoryKey));
}

interface CandidateSource {
  readonly backend: string;
  readonly route: string;
  readonly arm?: string | undefined;
  readonly trajectory?: TrajectoryState | undefined;
}

export function candidateTagOf(from: CandidateSource): MemoryTag {
  const { backend, route, arm, trajectory } = from;
  const tag: MemoryTag = { backend, route };
  if (arm !== undefined) tag.arm = arm;
  if (trajectory !== undefined) {
    // A step served by another backend than the trajectory's split arm is a crossover.
    tag.trajectory = arm !== undefined && backend !== arm ? withFlag(trajectory, 'x') : trajectory;
  }
  return tag;
}

export function tagWithFlag(tag: MemoryTag, flag: TrajectoryFlag): MemoryTag {
  if (tag.trajectory === undefined || tag.trajectory.flags.includes(flag)) return tag;
  return Object.assign({}, tag, { trajectory: withFlag(tag.trajectory, flag) });
}

export function withFlag(t: TrajectoryState, flag: TrajectoryFlag): TrajectoryState {
  if (t.flags.includes(flag)) return t;
  return Object.assign({}, t, { flags: FLAG_ORDER.filter((f) => f === flag || t.flags.includes(f)).join('') });
}

export function hasFlag(t: TrajectoryState | undefined, flag: TrajectoryFlag): boolean {
  return t !== undefined && t.flags.includes(flag);
}

function tagKey(tag: MemoryTag): string {
  const t = tag.trajectory;
  const traj = t === undefined ? '' : `${t.id}\u0000${t.experiment}\u0000${t.step}\u0000${t.s}\u0000${t.n}\u0000${t.stages}\u0000${t.hash}\u0000${t.flags}\u0000${t.stratum ?? ''}\u0000${t.key ?? ''}\u0000${t.replay ?? ''}`;
  return `${tag.backend}\u0000${tag.route}\u0000${tag.arm ?? ''}\u0000${tag.arm === undefined ? 0 : 1}\u0000${traj}`;
}

export function tagValue(tag: MemoryTag): JsonObject {
  const v: JsonObject = { backend: tag.backend, route: tag.route };
  if (tag.arm !== undefined) v.arm = tag.arm;
  const t = tag.trajectory;
  if (t !== undefined) {
    Object.assign(v, { trajectory: t.id, experiment: t.experiment, step: t.step, s: t.s, n: t.n, stages: t.stages, hash: t.hash, flags: t.flags });
    if (t.stratum !== undefined) v.stratum = t.stratum;
    if (t.key !== undefined) v.key = t.key;
    if (t.replay !== undefined) v.replay = t.replay;
    if (t.signer !== undefined) v.sig = t.signer.sign(signedText(tag.route, tag.arm, t));
  }
  return v;
}

/** The same object when the key is absent (the common case: no copy). */
export function stripMemoryKey(memory: JsonObject, key: string): JsonObject {
  if (!Object.prototype.hasOwnProperty.call(memory, key)) return memory;
  // Rest-spread defines own data properties, so a "__proto__" key in memory stays ordinary data.
  const { [key]: _dropped, ...rest } = memory;
  return rest;
}

/** A backend's candidate: the tag replaces the `key` member in its place. */
export function tagMemory(memory: JsonObject, key: string, tag: MemoryTag): JsonObject {
  // A computed key in a literal defines an own property, even for "__proto__"; Object.assign would set the
  // prototype from a client's own "__proto__" member instead of copying it.
  // eslint-disable-next-line no-restricted-syntax -- the client's bytes decide the keys here
  return { ...memory, [key]: tagValue(tag) };
}

/**
 * Shared by every error candidate of an input: 1000 of them over a 5,000-key memory would otherwise copy 5 million
 * properties. The WeakMap only holds memory already decoded (docs/performance.md#batches-die-young).
 */
const taggedInputs = new WeakMap<JsonObject, { key: string; tagKey: string; memory: JsonObject }>();

export function taggedInputMemory(memory: JsonObject, key: string, tag: MemoryTag): JsonObject {
  const hit = taggedInputs.get(memory);
  const k = tagKey(tag);
  if (hit !== undefined && hit.key === key && hit.tagKey === k) return hit.memory;
  const tagged = tagMemory(stripMemoryKey(memory, key), key, tag);
  taggedInputs.set(memory, { key, tagKey: k, memory: tagged });
  return tagged;
}

/** In place, anywhere in a coaching body; iterative, so depth is safe. */
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

/** A top-level memory_key member, with its neighbours' edges (-1: none). */
export interface TagSpan {
  readonly keyStart: number;
  readonly valueStart: number;
  readonly valueEnd: number;
  readonly prevEnd: number;
  nextStart: number;
}

/** A memory object as the indexers lay it out; firstKeyStart and lastValueEnd are meaningless when count is 0. */
export interface MemoryLayout {
  readonly start: number;
  readonly end: number;
  readonly count: number;
  readonly firstKeyStart: number;
  readonly lastValueEnd: number;
  readonly tags: readonly TagSpan[];
}

interface IndexedMemory {
  readonly buf: Buffer;
  readonly index: { readonly memoryLayout: MemoryLayout | undefined };
  readonly memory: { bytes(): Buffer };
}

const NO_MEMORY: MemoryLayout = { start: 0, end: 0, count: 0, firstKeyStart: -1, lastValueEnd: -1, tags: [] };

export function inputMemoryLayout(raw: IndexedMemory): MemoryLayout {
  return raw.index.memoryLayout ?? NO_MEMORY;
}

/** The last tag member decoded, as JSON.parse keeps the last. */
export function memoryTagValue(raw: IndexedMemory): unknown {
  const tags = raw.index.memoryLayout?.tags;
  const last = tags?.[tags.length - 1];
  if (last === undefined) return undefined;
  return parseExact(raw.buf.toString('utf8', last.valueStart, last.valueEnd)).value;
}

/** Everything but the tag members as sent, whitespace included. */
export function memoryWithoutTag(raw: IndexedMemory): Buffer[] {
  const m = raw.index.memoryLayout;
  if (m === undefined || m.tags.length === 0) return [raw.memory.bytes()];
  const buf = raw.buf;
  // A run followed by another keeps the separator after it; the last ends with its last value.
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

function tagMemberBytes(memoryKey: string, tag: MemoryTag): Buffer {
  return Buffer.from(`${JSON.stringify(memoryKey)}:${JSON.stringify(tagValue(tag))}`, 'utf8');
}

/** Kept across batches: without a trajectory a tag is made of config names, so there are few. */
const tagMembers = new Map<string, Map<string, Buffer>>();
const MAX_TAG_MEMBERS = 4096;

export function tagMember(memoryKey: string, tag: MemoryTag): { key: string; bytes: Buffer } {
  const key = tagKey(tag);
  // A tag with trajectory members is one input's own: caching it would only fill the map.
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

/** `replace`: the tag takes the first tag's place (as tagMemory); else tags are cut and it goes last. */
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
