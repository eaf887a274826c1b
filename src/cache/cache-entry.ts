/**
 * One stored cache entry: every candidate of one input, as the bytes after their candidate_index (the memory
 * tag the first run wrote included), and that tag. Layout: one JSON line `{"v":1,"tag":{...},"n":[len,...]}`,
 * then the tails one after the other. Decoding never trusts the bytes: anything unexpected is a miss.
 */
import { isStoredTag } from '../protocol/memory-tag.js';
import type { MemoryTag } from '../routing/plan.js';
import { isJsonObject } from '../protocol/schemas.js';

const VERSION = 1;
const NEWLINE = 0x0a;
const COMPLETED = Buffer.from(',"status":"completed",', 'latin1');

export interface CacheEntry {
  tag: MemoryTag;
  tails: Buffer[];
}

export function encodeEntry(e: CacheEntry): Buffer {
  const head = Buffer.from(`${JSON.stringify({ v: VERSION, tag: e.tag, n: e.tails.map((t) => t.length) })}\n`, 'utf8');
  return Buffer.concat([head, ...e.tails]);
}

/** The entry of `buf` when it holds exactly `count` completed candidates; undefined otherwise. */
export function decodeEntry(buf: Buffer, count: number): CacheEntry | undefined {
  const nl = buf.indexOf(NEWLINE);
  if (nl < 0) return undefined;
  let head: unknown;
  try {
    head = JSON.parse(buf.toString('utf8', 0, nl));
  } catch {
    return undefined;
  }
  if (!isJsonObject(head)) return undefined;
  const { v, tag, n: lengths } = head;
  if (v !== VERSION || !isStoredTag(tag) || !Array.isArray(lengths) || lengths.length !== count) return undefined;
  const tails: Buffer[] = [];
  let at = nl + 1;
  for (const length of lengths) {
    const n: unknown = length;
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= COMPLETED.length || at + n > buf.length) return undefined;
    const tail = buf.subarray(at, at + n);
    if (tail.compare(COMPLETED, 0, COMPLETED.length, 0, COMPLETED.length) !== 0) return undefined;
    tails.push(tail);
    at += n;
  }
  if (at !== buf.length) return undefined;
  return { tag, tails };
}
