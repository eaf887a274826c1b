/** The client key in the address, `/k/<key>/v1/responses` (docs/operations.md#client-keys): BENCH sends no header. */

export const KEY_PREFIX = '/k/';

export const REDACTED_KEY = 'REDACTED';

interface KeyPath {
  /** Percent-decoded (a segment that does not decode is kept as it came: it matches no valid key). */
  key: string;
  /** With its query: `/v1/responses`, `/` for `/k/<key>` alone, `/?a=1` for `/k/<key>?a=1`. */
  rest: string;
}

export function splitKeyPath(url: string): KeyPath | undefined {
  if (!url.startsWith(KEY_PREFIX)) return undefined;
  const start = KEY_PREFIX.length;
  const end = segmentEnd(url, start);
  const raw = url.slice(start, end);
  const rest = end === url.length ? '/' : url.charCodeAt(end) === 47 /* "/" */ ? url.slice(end) : `/${url.slice(end)}`;
  return { key: decodeSegment(raw), rest };
}

function segmentEnd(url: string, from: number): number {
  for (let i = from; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 47 /* "/" */ || c === 63 /* "?" */) return i;
  }
  return url.length;
}

function decodeSegment(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** Every `/k/` of the path, so a key pasted twice or after another prefix is not logged either. */
export function redactKeyPaths(url: string): string {
  const q = url.indexOf('?');
  const pathEnd = q < 0 ? url.length : q;
  let at = url.indexOf(KEY_PREFIX);
  if (at < 0 || at >= pathEnd) return url;
  let out = '';
  let from = 0;
  while (at >= 0 && at < pathEnd) {
    const start = at + KEY_PREFIX.length;
    const end = Math.min(segmentEnd(url, start), pathEnd);
    out += url.slice(from, start) + REDACTED_KEY;
    from = end;
    at = url.indexOf(KEY_PREFIX, end);
  }
  return out + url.slice(from);
}

/** `/health` or `/agents/<name>/health` (a route pattern `/agents/:agent/health` too), query ignored. */
export function isHealthPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/health') return true;
  const head = '/agents/';
  const tail = '/health';
  if (path.length <= head.length + tail.length || !path.startsWith(head) || !path.endsWith(tail)) return false;
  return !path.slice(head.length, path.length - tail.length).includes('/');
}
