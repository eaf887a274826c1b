/**
 * Proves bytes RFC 8259 JSON within server.max_json_depth, numbers finite, building no value; string interiors,
 * most of a memory, are crossed sixteen bytes at a time (string-scan.ts, docs/protocol-fidelity.md#how-a-batch-is-read).
 */
import { GatewayError } from '../../errors.js';
import { QUOTE, BACKSLASH, ESCAPES, HEX } from './json-bytes.js';
import { ESCAPE, newOwner, stringScan, type StringScan } from './string-scan.js';

/** Why a scan refused the bytes: the offset of the offending byte and a short reason (never client text). */
export class IndexReject extends GatewayError {
  constructor(
    readonly at: number,
    readonly reason: string,
  ) {
    super('GATEWAY_ERR_JSON_INVALID', `${reason} at byte ${at}`);
    this.name = 'IndexReject';
  }
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

const OBJECT = 1;
const ARRAY = 2;

export interface NumberToken {
  start: number;
  end: number;
  /** No fraction and no exponent: pydantic's strict integer. */
  integer: boolean;
  negative: boolean;
}

/** A method reading a token takes the offset where it starts, returns the one past it or throws IndexReject. */
export class JsonScanner {
  readonly len: number;
  private readonly id = newOwner();
  /** The container kinds of the value being skipped, one per nesting level. */
  private readonly stack: Uint8Array;
  /** The last string read held a backslash (its text differs from its bytes). */
  escaped = false;
  /** A value skipped since the caller last cleared this held a number that overflows. */
  nonFinite = false;
  nonFiniteAt = -1;

  constructor(
    readonly buf: Buffer,
    readonly maxDepth: number,
    /** Undefined without WebAssembly (node --jitless): strings are read byte by byte. */
    private readonly strings: StringScan | undefined = stringScan,
  ) {
    this.len = buf.length;
    this.stack = new Uint8Array(maxDepth + 2);
  }

  at(p: number): number {
    return p < this.len ? (this.buf[p] ?? -1) : -1;
  }

  ws(p: number): number {
    const b = this.buf;
    const len = this.len;
    while (p < len) {
      const c = b[p];
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return p;
      p++;
    }
    return p;
  }

  string(open: number): number {
    if (this.at(open) !== QUOTE) throw new IndexReject(open, 'expected a string');
    this.escaped = false;
    const close = this.strings === undefined ? this.stringEndBytes(open + 1) : this.stringEnd(this.strings, open + 1);
    return close + 1;
  }

  /** The closing quote of a string whose interior starts at `p`; escapes other than the one-character ones here. */
  private stringEnd(scan: StringScan, p: number): number {
    let escaped = false;
    for (;;) {
      const r = scan.end(this.id, this.buf, p);
      escaped ||= scan.escaped;
      if (r >= 0) {
        this.escaped = escaped;
        return r;
      }
      if (r === ESCAPE) {
        p = this.escape(scan.at);
        escaped = true;
        continue;
      }
      if (scan.at >= this.len) throw new IndexReject(this.len, 'unterminated string');
      throw new IndexReject(scan.at, 'control character in a string');
    }
  }

  private stringEndBytes(p: number): number {
    const b = this.buf;
    const len = this.len;
    while (p < len) {
      const c = b[p] ?? -1;
      if (c === QUOTE) return p;
      if (c === BACKSLASH) p = this.escape(p);
      else if (c < 0x20) throw new IndexReject(p, 'control character in a string');
      else p++;
    }
    throw new IndexReject(len, 'unterminated string');
  }

  private escape(p: number): number {
    this.escaped = true;
    const kind = ESCAPES[this.at(p + 1) & 0xff] ?? 0;
    if (p + 1 >= this.len) throw new IndexReject(this.len, 'unterminated string');
    if (kind === 1) return p + 2;
    if (kind === 0) throw new IndexReject(p, 'invalid escape');
    for (let k = p + 2; k < p + 6; k++) {
      if (k >= this.len || HEX[this.at(k)] !== 1) throw new IndexReject(p, 'invalid \\u escape');
    }
    return p + 6;
  }

  number(p: number, tok: NumberToken): number {
    const start = p;
    let c = this.at(p);
    const negative = c === 0x2d;
    if (negative) c = this.at(++p);
    if (c === 0x30) p++;
    else if (c >= 0x31 && c <= 0x39) {
      p++;
      while (isDigit(this.at(p))) p++;
    } else throw new IndexReject(start, 'expected a value');
    const intStart = start + (negative ? 1 : 0);
    const intDigits = p - intStart;
    let integer = true;
    let exponent = false;
    let fracStart = -1;
    let fracEnd = -1;
    if (this.at(p) === 0x2e) {
      integer = false;
      if (!isDigit(this.at(++p))) throw new IndexReject(p, 'expected a digit after the decimal point');
      fracStart = p;
      while (isDigit(this.at(p))) p++;
      fracEnd = p;
    }
    c = this.at(p);
    let exp = 0;
    if (c === 0x65 || c === 0x45) {
      integer = false;
      exponent = true;
      c = this.at(++p);
      const expNegative = c === 0x2d;
      if (c === 0x2b || c === 0x2d) p++;
      if (!isDigit(this.at(p))) throw new IndexReject(p, 'expected a digit in the exponent');
      // Capped: past a million the value is 0 or infinite whatever the digits say.
      while (isDigit(this.at(p))) {
        if (exp < 1e6) exp = exp * 10 + (this.at(p) - 0x30);
        p++;
      }
      if (expNegative) exp = -exp;
    }
    // An integer of any length is exact; a fraction overflows only with an exponent or over 308 integer digits.
    if (!integer && (exponent || intDigits > 308) && this.overflows(start, p, intStart, intDigits, fracStart, fracEnd, exp)) {
      if (!this.nonFinite) this.nonFiniteAt = start;
      this.nonFinite = true;
    }
    tok.start = start;
    tok.end = p;
    tok.integer = integer;
    tok.negative = negative;
    return p;
  }

  /** From the decimal magnitude without allocating (millions of `1e5` pay no string); only ~10^308 is converted. */
  private overflows(start: number, end: number, intStart: number, intDigits: number, fracStart: number, fracEnd: number, exp: number): boolean {
    let magnitude: number | undefined;
    for (let i = 0; i < intDigits; i++) {
      if (this.buf[intStart + i] !== 0x30) {
        magnitude = intDigits - i - 1 + exp;
        break;
      }
    }
    if (magnitude === undefined && fracStart !== -1) {
      for (let i = fracStart; i < fracEnd; i++) {
        if (this.buf[i] !== 0x30) {
          magnitude = -(i - fracStart + 1) + exp;
          break;
        }
      }
    }
    if (magnitude === undefined || magnitude < 308) return false; // zero, or below 1e308
    if (magnitude > 308) return true;
    return !Number.isFinite(Number(this.buf.toString('latin1', start, end)));
  }

  private literal(p: number, word: string): number {
    for (let k = 0; k < word.length; k++) {
      if (this.at(p + k) !== word.charCodeAt(k)) throw new IndexReject(p, 'expected a value');
    }
    return p + word.length;
  }

  /** A member's key and colon: returns where its value starts; `key` receives the key's quotes' span. */
  memberKey(p: number, key: { start: number; end: number }): number {
    const q = this.ws(p);
    if (this.at(q) !== QUOTE) throw new IndexReject(q, 'expected a property name in double quotes');
    key.start = q;
    key.end = this.string(q);
    const colon = this.ws(key.end);
    if (this.at(colon) !== 0x3a) throw new IndexReject(colon, "expected ':'");
    return this.ws(colon + 1);
  }

  private readonly scratch: NumberToken = { start: 0, end: 0, integer: true, negative: false };

  /** Any JSON value at `p`, in a container at `depth` (the top-level value sits at 0). */
  value(p: number, depth: number): number {
    const stack = this.stack;
    let top = 0;
    p = this.ws(p);
    for (;;) {
      const c = this.at(p);
      if (c === QUOTE) p = this.string(p);
      else if (c === 0x7b || c === 0x5b) {
        if (depth + top + 1 > this.maxDepth) throw new IndexReject(p, 'nested too deep');
        const close = c === 0x7b ? 0x7d : 0x5d;
        const q = this.ws(p + 1);
        if (this.at(q) === close) p = q + 1;
        else {
          stack[++top] = c === 0x7b ? OBJECT : ARRAY;
          p = c === 0x7b ? this.memberKey(q, this.keySpan) : q;
          continue;
        }
      } else if (c === 0x74) p = this.literal(p, 'true');
      else if (c === 0x66) p = this.literal(p, 'false');
      else if (c === 0x6e) p = this.literal(p, 'null');
      else p = this.number(p, this.scratch);
      // A value ended at p: close containers until one expects another value.
      for (;;) {
        if (top === 0) return p;
        p = this.ws(p);
        const d = this.at(p);
        const kind = stack[top];
        if (d === 0x2c) {
          p = kind === OBJECT ? this.memberKey(p + 1, this.keySpan) : this.ws(p + 1);
          break;
        }
        if (d !== (kind === OBJECT ? 0x7d : 0x5d)) throw new IndexReject(p, kind === OBJECT ? "expected ',' or '}'" : "expected ',' or ']'");
        top--;
        p++;
      }
    }
  }

  private readonly keySpan = { start: 0, end: 0 };

  /** Exact for ASCII, never equal to an ASCII name otherwise. */
  latin1(start: number, end: number): string {
    return end - start <= SHORT_TEXT ? shortText(this.buf, start, end, false) : this.buf.toString('latin1', start, end);
  }

  text(start: number, end: number, escaped: boolean): string {
    if (!escaped) {
      return end - start - 2 <= SHORT_TEXT ? shortText(this.buf, start + 1, end - 1, true) : this.buf.toString('utf8', start + 1, end - 1);
    }
    // A validated string token: JSON.parse decodes its escapes exactly (lone surrogates included).
    const text: unknown = JSON.parse(this.buf.toString('utf8', start, end));
    if (typeof text !== 'string') throw new GatewayError('GATEWAY_ERR_INTERNAL', 'a validated string token decoded to a non-string');
    return text;
  }
}

/** Every body repeats the same few short texts, and toString costs more than hashing their bytes. Direct-mapped. */
const SHORT_TEXT = 24;
const TEXT_SLOTS = 1024;
const shortTexts: (string | undefined)[] = new Array<string | undefined>(TEXT_SLOTS).fill(undefined);

/** Latin1 and UTF-8 agree on ASCII, the only bytes cached. */
function shortText(buf: Buffer, start: number, end: number, utf8: boolean): string {
  let h = end - start;
  let ascii = true;
  for (let i = start; i < end; i++) {
    const c = buf[i]!; // i < end <= buf.length; a per-byte scan, kept without an undefined branch
    if (c >= 0x80) ascii = false;
    h = (Math.imul(h, 31) + c) | 0;
  }
  if (!ascii) return buf.toString(utf8 ? 'utf8' : 'latin1', start, end);
  const slot = h & (TEXT_SLOTS - 1);
  const hit = shortTexts[slot];
  if (hit !== undefined && hit.length === end - start) {
    let same = true;
    for (let i = 0; i < hit.length && same; i++) same = hit.charCodeAt(i) === buf[start + i];
    if (same) return hit;
  }
  const text = buf.toString('latin1', start, end);
  shortTexts[slot] = text;
  return text;
}
