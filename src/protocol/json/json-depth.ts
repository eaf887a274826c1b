/**
 * The nesting depth of JSON text, found by one linear scan before anything parses or walks the value.
 *
 * JSON.parse itself copes with deep nesting, but JSON.stringify, zod, node:util's isDeepStrictEqual and any
 * recursive walk do not: a body nested 10,000 levels deep throws "Maximum call stack size exceeded" from
 * whichever runs first. So every text from a client or a backend is checked against `server.max_json_depth`
 * first, and a deeper one is refused with a message naming the key (docs/protocol-fidelity.md#limits).
 *
 * The scan counts `[` and `{` outside strings and jumps over strings with indexOf, so long string values (most
 * of a memory's bytes) cost almost nothing. It does not validate the JSON: JSON.parse does that afterwards.
 */

/** Default of `server.max_json_depth`; also the bound used where no config is at hand. */
export const DEFAULT_MAX_JSON_DEPTH = 128;

/**
 * The most `server.max_json_depth` may be, and the bound parseExact applies when its caller gives none:
 * node:util's isDeepStrictEqual overflows the stack near 2,000 levels and JSON.stringify near 8,000, and a
 * request handler starts with part of the stack already used.
 */
export const MAX_JSON_DEPTH_CEILING = 512;

/** The config key named in every message about the limit. */
const MAX_JSON_DEPTH_KEY = 'server.max_json_depth';

/** Index of the quote that closes the string opened at `open`, or -1 (unterminated). */
export function stringEnd(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q !== -1) {
    // A quote preceded by an odd run of backslashes is escaped; each run is counted once, so this stays linear.
    let bs = 0;
    for (let k = q - 1; text.charCodeAt(k) === 92; k--) bs++;
    if ((bs & 1) === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return -1;
}

/**
 * Where the text first nests deeper than `maxDepth` levels (the index of the opening bracket that goes past
 * it), or -1 when it never does. Depth 1 is the top-level object or array.
 */
export function exceedsDepth(text: string, maxDepth: number): number {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      const close = stringEnd(text, i);
      if (close === -1) return -1; // unterminated string: JSON.parse reports it
      i = close;
    } else if (c === 123 || c === 91) {
      if (++depth > maxDepth) return i;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return -1;
}

/** The message for text nested too deeply, naming the limit and its key. */
export function tooDeepMessage(maxDepth: number): string {
  return `JSON nested deeper than ${maxDepth} levels (${MAX_JSON_DEPTH_KEY})`;
}
