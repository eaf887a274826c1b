/**
 * One stored cache entry (docs/cache.md#what-an-entry-holds): a JSON line, then each candidate's bytes after its
 * candidate_index with the memory tag cut out at `at`. Decoding never trusts the bytes: anything unexpected is a miss.
 */
import { isJsonObject, parseJsonOrUndefined } from '../protocol/schemas.js';

const VERSION = 2;
const NEWLINE = 0x0a;
const COMPLETED = Buffer.from(',"status":"completed",', 'latin1');
const HEX32 = /^[0-9a-f]{32}$/;
const EXPERIMENT_ID = /^[0-9a-f]{1,32}$/;

/** The trajectory step whose live answer an entry holds: its id, its step, its experiment. */
interface Producer {
  t: string;
  k: number;
  x: string;
}

interface UntaggedTail {
  tail: Buffer;
  at: number;
}

export interface CacheEntry {
  backend: string;
  arm?: string;
  by?: Producer;
  tails: UntaggedTail[];
}

export function encodeEntry(e: CacheEntry): Buffer {
  const head = { v: VERSION, backend: e.backend, ...(e.arm === undefined ? {} : { arm: e.arm }), ...(e.by === undefined ? {} : { by: e.by }), n: e.tails.map((t) => t.tail.length), at: e.tails.map((t) => t.at) };
  return Buffer.concat([Buffer.from(`${JSON.stringify(head)}\n`, 'utf8'), ...e.tails.map((t) => t.tail)]);
}

function producerOf(v: unknown): Producer | undefined {
  if (!isJsonObject(v)) return undefined;
  const { t, k, x } = v;
  if (typeof t !== 'string' || !HEX32.test(t) || typeof k !== 'number' || !Number.isInteger(k) || k < 1 || typeof x !== 'string' || !EXPERIMENT_ID.test(x)) return undefined;
  return { t, k, x };
}

function offset(v: unknown, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > COMPLETED.length && v < max;
}

/** Undefined unless `buf` holds exactly `count` completed candidates. */
export function decodeEntry(buf: Buffer, count: number): CacheEntry | undefined {
  const nl = buf.indexOf(NEWLINE);
  if (nl < 0) return undefined;
  const head = parseJsonOrUndefined(buf.toString('utf8', 0, nl));
  if (!isJsonObject(head)) return undefined;
  const { v, backend, arm, n: lengths, at: offsets } = head;
  if (v !== VERSION || typeof backend !== 'string' || backend === '' || (arm !== undefined && typeof arm !== 'string')) return undefined;
  if (!Array.isArray(lengths) || !Array.isArray(offsets) || lengths.length !== count || offsets.length !== count) return undefined;
  const tails: UntaggedTail[] = [];
  let at = nl + 1;
  for (let i = 0; i < count; i++) {
    const n: unknown = lengths[i];
    const o: unknown = offsets[i];
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= COMPLETED.length || at + n > buf.length || !offset(o, n)) return undefined;
    const tail = buf.subarray(at, at + n);
    if (tail.compare(COMPLETED, 0, COMPLETED.length, 0, COMPLETED.length) !== 0) return undefined;
    tails.push({ tail, at: o });
    at += n;
  }
  if (at !== buf.length) return undefined;
  const by = producerOf(head.by);
  return { backend, ...(typeof arm === 'string' ? { arm } : {}), ...(by === undefined ? {} : { by }), tails };
}
