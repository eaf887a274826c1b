/** Nesting depth by one linear scan: JSON.stringify, zod and any recursive walk overflow the stack. */

export const DEFAULT_MAX_JSON_DEPTH = 128;

/**
 * isDeepStrictEqual overflows the stack near 2,000 levels and JSON.stringify near 8,000, and a request handler
 * starts with part of the stack already used.
 */
export const MAX_JSON_DEPTH_CEILING = 512;

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

/** The index of the bracket that first nests deeper than `maxDepth` (the top level is 1), or -1. */
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

export function tooDeepMessage(maxDepth: number): string {
  return `JSON nested deeper than ${maxDepth} levels (${MAX_JSON_DEPTH_KEY})`;
}
