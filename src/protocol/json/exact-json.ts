/**
 * Native JSON.parse / JSON.stringify speed without losing a number (a lossless parser is ~80x slower): numbers that
 * do not print back as written become secret-nonce string markers and back (docs/protocol-fidelity.md#exact-json).
 */
import { randomBytes } from 'node:crypto';
import { isMainThread, workerData } from 'node:worker_threads';
import { exceedsDepth, MAX_JSON_DEPTH_CEILING, stringEnd, tooDeepMessage } from './json-depth.js';
import { GatewayError } from '../../errors.js';
import type { IntValue } from './json-values.js';

/** What a thread that reads bodies for the main one is started with: a marker must mean the same on both sides. */
interface ExactJsonThreadData {
  numberMarkNonce: string;
}

function isThreadData(v: unknown): v is ExactJsonThreadData {
  return typeof v === 'object' && v !== null && 'numberMarkNonce' in v && typeof v.numberMarkNonce === 'string';
}

const NONCE = !isMainThread && isThreadData(workerData) ? workerData.numberMarkNonce : randomBytes(16).toString('hex');

export const EXACT_JSON_THREAD_DATA: ExactJsonThreadData = { numberMarkNonce: NONCE };
const NUMBER_MARK = '\uE000' + NONCE;
const MARK_LEN = NUMBER_MARK.length;

/** Non-canonical number tokens; most bodies match nothing and cost this one native test (0.7x a JSON.parse). */
const RISKY_RE =
  /[:,[][ \t\r\n]*-?\d(?:(?<=-0)(?![.\deE])|[\d.]{15}|\d*(?:\.\d+)?[eE]|\d*\.\d*0(?!\d)|(?<=0)\.000000)/;
/** Linear, as RISKY_RE: an attempt starts at a `[`, `:` or `,` and its digits span one token at most. */
const CANDIDATE_RE = /[[:,]\s*(-?\d[\d.eE+-]*)/g;
const NUMBER_RE = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

export class JsonSyntaxError extends GatewayError {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super('GATEWAY_ERR_JSON_INVALID', message);
    this.name = 'JsonSyntaxError';
  }
}

/** Refused before JSON.parse, so nothing recursive ever sees the text. */
export class JsonDepthError extends JsonSyntaxError {
  constructor(
    readonly maxDepth: number,
    position: number,
  ) {
    super(tooDeepMessage(maxDepth), position);
    this.name = 'JsonDepthError';
  }
}

interface ExactParseOptions {
  /** Capped at MAX_JSON_DEPTH_CEILING (also the default). */
  maxDepth?: number;
}

/** `1e400`: an integer of any length is exact and never overflows, only a fraction or an exponent can. */
export function overflows(tok: string): boolean {
  return !INTEGER_RE.test(tok) && !Number.isFinite(Number(tok));
}
const INTEGER_RE = /^-?\d+$/;

export interface ExactParse {
  value: unknown;
  marked: boolean;
  /** A number overflows to +-Infinity; the contract requires finite numbers. */
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
    const digits = m[1]; // the regex's one capture group, set on every match
    if (digits === undefined || !isCanonical(digits)) return true;
  }
  return false;
}

/** 0-9 . e E + - */
function isNumberChar(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45;
}

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
          if (overflows(tok)) nonFinite = true;
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

/** Throws JsonSyntaxError on invalid JSON, JsonDepthError (one) on text nested deeper than the limit. */
export function parseExact(text: string, opts: ExactParseOptions = {}): ExactParse {
  const maxDepth = Math.min(opts.maxDepth ?? MAX_JSON_DEPTH_CEILING, MAX_JSON_DEPTH_CEILING);
  const deepAt = exceedsDepth(text, maxDepth);
  if (deepAt !== -1) throw new JsonDepthError(maxDepth, deepAt);
  const { text: src, marked, nonFinite } = needsRewrite(text) ? rewrite(text) : { text, marked: false, nonFinite: false };
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
  // V8 quotes a snippet of the text, which may cut a marker anywhere: drop every prefix piece it shows.
  return new JsonSyntaxError(msg.replace(/\uE000[0-9a-f]{0,32}/g, ''), position);
}

/**
 * Only a marker that is a whole string value becomes a number again; one elsewhere (copied into a message) stays a
 * string without its secret prefix, so the nonce never leaves the process.
 */
export function stringifyExact(value: unknown): string {
  const s = JSON.stringify(value);
  let at = s.indexOf(NUMBER_MARK);
  if (at === -1) return s;
  // String concatenation builds a rope that is flattened once on write; Array#join would copy the whole text.
  let out = '';
  let last = 0;
  while (at !== -1) {
    const numEnd = wholeMarkerEnd(s, at);
    if (numEnd !== -1) {
      out += s.slice(last, at - 1) + s.slice(at + MARK_LEN, numEnd);
      last = numEnd + 1; // past the closing quote
    } else {
      out += s.slice(last, at);
      last = at + MARK_LEN;
    }
    at = s.indexOf(NUMBER_MARK, last);
  }
  return out + s.slice(last);
}

/** The index of the closing quote of the marker at `at` when it is a whole value, else -1. */
function wholeMarkerEnd(s: string, at: number): number {
  if (s.charCodeAt(at - 1) !== 34) return -1;
  const before = at >= 2 ? s.charCodeAt(at - 2) : -1;
  if (before !== -1 && before !== 91 && before !== 44 && before !== 58) return -1; // [ , :
  let e = at + MARK_LEN;
  while (e < s.length && isNumberChar(s.charCodeAt(e))) e++;
  if (e === at + MARK_LEN || s.charCodeAt(e) !== 34) return -1;
  const after = e + 1 < s.length ? s.charCodeAt(e + 1) : -1;
  if (after !== -1 && after !== 44 && after !== 93 && after !== 125) return -1; // , ] }
  return NUMBER_RE.test(s.slice(at + MARK_LEN, e)) ? e : -1;
}

export function scrubMarkers(text: string): string {
  return text.includes(NUMBER_MARK) ? text.split(NUMBER_MARK).join('') : text;
}

export function isNumberMark(v: unknown): v is string {
  return typeof v === 'string' && v.length > MARK_LEN && v.charCodeAt(0) === 0xe000 && v.startsWith(NUMBER_MARK);
}

export function numberMarkText(v: string): string {
  return v.slice(MARK_LEN);
}

export function numberMark(text: string): string {
  return NUMBER_MARK + text;
}

export function jsonNumberText(v: unknown): string | undefined {
  if (typeof v === 'number') return String(v);
  if (isNumberMark(v)) return numberMarkText(v);
  return undefined;
}

/** Pydantic's strict int: an integral JS number below 1e21 prints as plain digits, so it was written so. */
export function isStrictInt(v: unknown): v is IntValue {
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e21;
  return isNumberMark(v) && /^-?\d+$/.test(numberMarkText(v));
}

export function intKey(v: unknown): string {
  if (typeof v === 'number') return String(v === 0 ? 0 : v);
  // The JSON grammar allows no leading zeros, so the text is already the decimal form except for `-0`; BigInt
  // would take quadratic time on a million-digit id.
  if (isNumberMark(v)) {
    const t = numberMarkText(v);
    return t === '-0' ? '0' : t;
  }
  return String(v);
}

/** For routing matches, where a big integer's lost precision does not matter. */
export function numericValue(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (isNumberMark(v)) return Number(numberMarkText(v));
  return undefined;
}
