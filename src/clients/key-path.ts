/**
 * The client key in the address (docs/operations.md#client-keys): BENCH and GEN send no custom header, so a key can
 * travel as the first path segments, `http://gw:8888/k/<key>/v1/responses`; the rest of the path is what the
 * gateway serves. Everything here is linear string work on client text (indexOf and slices, no regex).
 */

export const KEY_PREFIX = '/k/';

/** What a logged or shown URL holds instead of a key. */
export const REDACTED_KEY = 'REDACTED';

interface KeyPath {
  /** The key, percent-decoded (a segment that does not decode is kept as it came: it matches no valid key). */
  key: string;
  /** The path after `/k/<key>`, with its query: `/v1/responses`, `/` for `/k/<key>` alone, `/?a=1` for `/k/<key>?a=1`. */
  rest: string;
}

/** `/k/<key>/rest?q` split into key and rest; undefined when the URL does not start with `/k/`. */
export function splitKeyPath(url: string): KeyPath | undefined {
  if (!url.startsWith(KEY_PREFIX)) return undefined;
  const start = KEY_PREFIX.length;
  const end = segmentEnd(url, start);
  const raw = url.slice(start, end);
  const rest = end === url.length ? '/' : url.charCodeAt(end) === 47 /* "/" */ ? url.slice(end) : `/${url.slice(end)}`;
  return { key: decodeSegment(raw), rest };
}

/** Where the path segment starting at `from` ends: the next "/" or "?", else the end of the URL. */
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

/**
 * The URL with the segment after every `/k/` of its path replaced by REDACTED_KEY, for log lines: a key pasted
 * twice (`/k/<key>/k/<key>/...`) or after another prefix is not written either. The query is left as it is.
 */
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
    // The "/" that ends this segment may start the next `/k/`.
    at = url.indexOf(KEY_PREFIX, end);
  }
  return out + url.slice(from);
}

/**
 * Whether a path (query ignored) is a health check: `/health`, or a virtual agent's `/agents/<name>/health`.
 * A route pattern (`/agents/:agent/health`) counts the same.
 */
export function isHealthPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/health') return true;
  const head = '/agents/';
  const tail = '/health';
  if (path.length <= head.length + tail.length || !path.startsWith(head) || !path.endsWith(tail)) return false;
  return !path.slice(head.length, path.length - tail.length).includes('/');
}
