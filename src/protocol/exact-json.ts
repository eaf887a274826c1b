/**
 * Exact JSON: parse and serialize at native JSON.parse / JSON.stringify speed without losing a number.
 *
 * The contract (docs/agent-contract.md, "Inference input": JSON numbers must be finite, and
 * "Strictness") requires integers of any size and every number in
 * the free-form objects to round-trip exactly. JS numbers cannot hold `12345678901234567890`, `1.0` or `-0` as
 * written, and a lossless parser is ~80x slower than JSON.parse on this machine.
 *
 * Design: almost every number in real traffic is "canonical": `String(Number(text)) === text`, so JSON.parse
 * then JSON.stringify reproduces it digit for digit. A cheap scan finds number-like tokens; when all are
 * canonical (the common case) the body goes straight to JSON.parse. Otherwise each non-canonical number token
 * outside strings is rewritten to a string marker `"\uE000<nonce><source text>"` before JSON.parse, and
 * `stringifyExact` turns markers back into the raw number text after JSON.stringify. The nonce is 128 random
 * bits drawn at start, never sent anywhere, so no client string can collide with a marker.
 */
import { randomBytes } from 'node:crypto';

const NONCE = randomBytes(16).toString('hex');
/** Prefix of a string that stands for a JSON number kept as its source text. */
export const NUMBER_MARK = '\uE000' + NONCE;
const MARK_LEN = NUMBER_MARK.length;

/**
 * Every non-canonical number token matches this: right after a structural `:`, `,` or `[` (the only places a
 * number can start, so digits inside strings such as hex ids never trigger it), a token with `-0`, 16+ digits,
 * an exponent, a fraction ending in 0, or a value below 1e-6. A canonical token has at most 15 significant
 * digits, no exponent below 1e21, no trailing fraction zero and no `-0`, so it never matches. Most bodies match
 * nothing, and one native regex test (about 0.7x a JSON.parse of the same text) is all they cost.
 */
const RISKY_RE =
  /[:,[][ \t\r\n]*-?\d(?:(?<=-0)(?![.\deE])|[\d.]{15}|\d*(?:\.\d+)?[eE]|\d*\.\d*0(?!\d)|(?<=0)\.000000)/;
/** A number-like token right after a structural `[`, `:` or `,`; in-string look-alikes only cost a slow path. */
const CANDIDATE_RE = /[[:,]\s*(-?\d[\d.eE+-]*)/g;
/** The JSON number grammar, whole token. */
const NUMBER_RE = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

export interface ExactParse {
  value: unknown;
  /** True when the value holds number markers: serialize it with stringifyExact. */
  marked: boolean;
  /** True when some number overflows to +-Infinity (e.g. 1e400): the contract requires finite numbers. */
  nonFinite: boolean;
}

function isCanonical(tok: string): boolean {
  return String(Number(tok)) === tok;
}

function needsRewrite(text: string): boolean {
  // A bare top-level number has no structural character before it.
  const c = text.charCodeAt(0);
  if (c === 45 || (c >= 48 && c <= 57) || c === 32 || c === 9 || c === 10 || c === 13) {
    const bare = text.trim();
    if (/^-?\d/.test(bare) && !isCanonical(bare)) return true;
  }
  if (!RISKY_RE.test(text)) return false;
  CANDIDATE_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = CANDIDATE_RE.exec(text)) !== null) {
    if (!isCanonical(m[1]!)) return true;
  }
  return false;
}

function isNumberChar(c: number): boolean {
  // 0-9 . e E + -
  return (c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45;
}

/** Index of the quote that closes the string opened at `open`, or -1. */
function stringEnd(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q !== -1) {
    let bs = 0;
    for (let k = q - 1; text.charCodeAt(k) === 92; k--) bs++;
    if ((bs & 1) === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return -1;
}

/** Rewrite every non-canonical number token outside strings into a marker string. */
function rewrite(text: string): { text: string; marked: boolean; nonFinite: boolean } {
  const parts: string[] = [];
  let marked = false;
  let nonFinite = false;
  let last = 0;
  let i = 0;
  while (i < text.length) {
    const q = text.indexOf('"', i);
    const end = q === -1 ? text.length : q;
    // Structural text between strings is short: scan it by hand (a regex here could run ahead past `end`).
    let k = i;
    while (k < end) {
      const c = text.charCodeAt(k);
      if (c === 45 || (c >= 48 && c <= 57)) {
        let e = k + 1;
        while (e < end && isNumberChar(text.charCodeAt(e))) e++;
        const tok = text.slice(k, e);
        if (NUMBER_RE.test(tok) && !isCanonical(tok)) {
          parts.push(text.slice(last, k), '"', NUMBER_MARK, tok, '"');
          last = e;
          marked = true;
          if (!Number.isFinite(Number(tok))) nonFinite = true;
        }
        k = e;
      } else k++;
    }
    if (q === -1) break;
    const close = stringEnd(text, q);
    if (close === -1) break; // unterminated string: JSON.parse reports it
    i = close + 1;
  }
  if (!marked) return { text, marked, nonFinite };
  parts.push(text.slice(last));
  return { text: parts.join(''), marked, nonFinite };
}

/** Parse JSON text, keeping every number exactly. Throws JsonSyntaxError on invalid JSON. */
export function parseExact(text: string): ExactParse {
  let src = text;
  let marked = false;
  let nonFinite = false;
  if (needsRewrite(text)) {
    const r = rewrite(text);
    src = r.text;
    marked = r.marked;
    nonFinite = r.nonFinite;
  }
  try {
    return { value: JSON.parse(src), marked, nonFinite };
  } catch (err) {
    throw toSyntaxError(err, text);
  }
}

function toSyntaxError(err: unknown, text: string): JsonSyntaxError {
  const msg = err instanceof Error ? err.message : String(err);
  const pos = /position (\d+)/.exec(msg);
  // Positions refer to the rewritten text when markers were inserted; they are a hint, the message says what.
  const position = pos ? Number(pos[1]) : text.length;
  return new JsonSyntaxError(msg.replace(/\uE000[0-9a-f]{32}/g, ''), position);
}

/** Serialize a value produced by parseExact (or built from such values) back to exact JSON text. */
export function stringifyExact(value: unknown, marked = true): string {
  const s = JSON.stringify(value);
  if (!marked) return s;
  let at = s.indexOf('\uE000');
  if (at === -1) return s;
  // Markers are whole JSON strings `"\uE000<nonce><digits>"`: drop the quotes and the prefix, keep the digits.
  // String concatenation builds a rope that is flattened once on write; Array#join would copy the whole text.
  let out = '';
  let last = 0;
  while (at !== -1) {
    if (s.charCodeAt(at - 1) === 34 && s.startsWith(NUMBER_MARK, at)) {
      const close = s.indexOf('"', at);
      out += s.slice(last, at - 1) + s.slice(at + MARK_LEN, close);
      last = close + 1;
      at = s.indexOf('\uE000', last);
    } else at = s.indexOf('\uE000', at + 1);
  }
  return out + s.slice(last);
}

/** A number kept as source text (big integer, `1.0`, `-0`, `1e400`, ...). */
export function isNumberMark(v: unknown): v is string {
  return typeof v === 'string' && v.length > MARK_LEN && v.charCodeAt(0) === 0xe000 && v.startsWith(NUMBER_MARK);
}

export function numberMarkText(v: string): string {
  return v.slice(MARK_LEN);
}

/** Build a marker for a number given as source text (tests, config values). */
export function numberMark(text: string): string {
  return NUMBER_MARK + text;
}

/** The JSON source text of a number value, marked or not; undefined when `v` is not a number. */
export function jsonNumberText(v: unknown): string | undefined {
  if (typeof v === 'number') return String(v);
  if (isNumberMark(v)) return numberMarkText(v);
  return undefined;
}

/**
 * A strict integer in the pydantic sense: an integer literal in the source (`7`, `-3`, `99999999999999999999`),
 * never `1.0`, `1e0`, `true` or `"1"`. Canonical JS numbers below 1e21 print as plain digits, so an integral
 * number here came from an integer literal; larger ones print with an exponent and were written that way.
 */
export function isStrictInt(v: unknown): boolean {
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e21;
  return isNumberMark(v) && /^-?\d+$/.test(numberMarkText(v));
}

/** A normalized decimal key for a strict integer (so `-0` and `0` are the same id). */
export function intKey(v: unknown): string {
  if (typeof v === 'number') return String(v === 0 ? 0 : v);
  if (isNumberMark(v)) return BigInt(numberMarkText(v)).toString();
  return String(v);
}

/** Numeric value for comparisons (routing matches); big integers lose precision here, which is fine for matching. */
export function numericValue(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (isNumberMark(v)) return Number(numberMarkText(v));
  return undefined;
}
