/**
 * Values as messages quote them: a spliced marker would leak its secret prefix, a long string copy megabytes into
 * every candidate; strings are JSON literals, so they cannot change a message's shape.
 */
import { isNumberMark, numberMarkText, scrubMarkers } from './json/exact-json.js';

const DESCRIBE_MAX_CHARS = 80;
const REASON_MAX_CHARS = 1000;

function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  // Never end on the first half of a surrogate pair.
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end) + '…';
}

export function describeValue(v: unknown, max = DESCRIBE_MAX_CHARS): string {
  if (isNumberMark(v)) return cut(numberMarkText(v), max);
  if (typeof v === 'string') return JSON.stringify(cut(v, max));
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return typeof v;
}

/** `memory.a.0`, each key cut. */
export function describePath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path.map((p) => (typeof p === 'symbol' ? '?' : cut(String(p), DESCRIBE_MAX_CHARS))).join('.');
}

/** Free text built from values made safe to log or send. */
export function safeReason(text: string): string {
  return cut(scrubMarkers(text), REASON_MAX_CHARS);
}
