/**
 * Client and backend values as the gateway quotes them in messages and logs: short, and never a number marker.
 *
 * Messages the gateway builds (an error candidate's message, a log line's reason, the admin API's last error)
 * never splice raw values in: a marker spliced into a message is not a whole JSON value, so it would leak the
 * marker's secret prefix, and a long string would copy a client's megabytes into every candidate. Here a marker is
 * its number text, a string is cut and written as a JSON string literal (so quotes and control characters in it
 * cannot change the message's shape), and objects and lists are named, not printed.
 */
import { isNumberMark, numberMarkText, scrubMarkers } from './json/exact-json.js';

/** Characters of a string value quoted in a message; longer ones are cut and marked with `…`. */
const DESCRIBE_MAX_CHARS = 80;

/** Characters of a whole reason (a list of problems) kept in a message or log line. */
const REASON_MAX_CHARS = 1000;

function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  // Never end on the first half of a surrogate pair.
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end) + '…';
}

/** A value for a message: `1.0` for a marker, `"text"` for a string (cut), `an object` for an object. */
export function describeValue(v: unknown, max = DESCRIBE_MAX_CHARS): string {
  if (isNumberMark(v)) return cut(numberMarkText(v), max);
  if (typeof v === 'string') return JSON.stringify(cut(v, max));
  if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return typeof v;
}

/** A path inside a value (`memory.a.0`), each key cut so a backend's megabyte key stays a short message. */
export function describePath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path.map((p) => (typeof p === 'symbol' ? '?' : cut(String(p), DESCRIBE_MAX_CHARS))).join('.');
}

/** Free text built from values (a reason, an error's message) made safe to log or send: no marker, bounded. */
export function safeReason(text: string): string {
  return cut(scrubMarkers(text), REASON_MAX_CHARS);
}
