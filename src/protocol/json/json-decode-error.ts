/**
 * Why a body is not JSON in CPython 3.11/3.12 json's words and code-point positions, but `NaN` and `Infinity` are
 * "Expecting value": the contract requires finite numbers (docs/errors.md#validation-errors-422).
 */

interface JsonDecodeError {
  pos: number;
  msg: string;
}

const WS = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const DIGIT = (c: number): boolean => c >= 0x30 && c <= 0x39;
const HEX = (c: number): boolean => DIGIT(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const SIMPLE_ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't'].map((c) => c.charCodeAt(0)));

class Fail {
  constructor(
    readonly at: number,
    readonly msg: string,
  ) {}
}

/** A surrogate pair is one character for Python. */
function codePoints(s: string, index: number): number {
  let n = index;
  for (let i = 1; i < index; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff) {
      const p = s.charCodeAt(i - 1);
      if (p >= 0xd800 && p <= 0xdbff) n--;
    }
  }
  return n;
}

function scanString(s: string, begin: number): number {
  let i = begin + 1;
  for (;;) {
    if (i >= s.length) throw new Fail(begin, 'Unterminated string starting at');
    const c = s.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) throw new Fail(i, 'Invalid control character at');
    if (c !== 0x5c) {
      i++;
      continue;
    }
    if (i + 1 >= s.length) throw new Fail(begin, 'Unterminated string starting at');
    const e = s.charCodeAt(i + 1);
    if (e === 0x75) {
      // `\u` needs four hex digits and something after them (CPython reports at the `u`).
      if (i + 6 >= s.length) throw new Fail(i + 1, 'Invalid \\uXXXX escape');
      for (let k = i + 2; k < i + 6; k++) if (!HEX(s.charCodeAt(k))) throw new Fail(i + 1, 'Invalid \\uXXXX escape');
      i += 6;
    } else if (SIMPLE_ESCAPES.has(e)) {
      i += 2;
    } else throw new Fail(i, 'Invalid \\escape');
  }
}

function scanNumber(s: string, start: number): number {
  let i = start;
  if (s.charCodeAt(i) === 0x2d) i++;
  if (s.charCodeAt(i) === 0x30) i++;
  else if (DIGIT(s.charCodeAt(i))) while (DIGIT(s.charCodeAt(i))) i++;
  else throw new Fail(start, 'Expecting value');
  // A fraction or exponent without digits is not part of the number: what follows it is the error.
  if (s.charCodeAt(i) === 0x2e && DIGIT(s.charCodeAt(i + 1))) {
    i += 2;
    while (DIGIT(s.charCodeAt(i))) i++;
  }
  const e = s.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    let k = i + 1;
    const sign = s.charCodeAt(k);
    if (sign === 0x2b || sign === 0x2d) k++;
    if (DIGIT(s.charCodeAt(k))) {
      while (DIGIT(s.charCodeAt(k))) k++;
      i = k;
    }
  }
  return i;
}

function skipWs(s: string, i: number): number {
  while (i < s.length && WS(s.charCodeAt(i))) i++;
  return i;
}

function scanKey(s: string, i: number): number {
  if (s.charCodeAt(i) !== 0x22) throw new Fail(i, 'Expecting property name enclosed in double quotes');
  i = skipWs(s, scanString(s, i));
  if (s.charCodeAt(i) !== 0x3a) throw new Fail(i, "Expecting ':' delimiter");
  return skipWs(s, i + 1);
}

const OBJECT = 1;
const ARRAY = 2;

function scan(s: string): void {
  const stack: number[] = [];
  let i = skipWs(s, 0);
  for (;;) {
    if (i >= s.length) throw new Fail(i, 'Expecting value');
    const c = s.charCodeAt(i);
    if (c === 0x22) i = scanString(s, i);
    else if (c === 0x7b) {
      i = skipWs(s, i + 1);
      if (s.charCodeAt(i) !== 0x7d) {
        stack.push(OBJECT);
        i = scanKey(s, i);
        continue;
      }
      i++;
    } else if (c === 0x5b) {
      i = skipWs(s, i + 1);
      if (s.charCodeAt(i) !== 0x5d) {
        stack.push(ARRAY);
        continue;
      }
      i++;
    } else if (s.startsWith('null', i) || s.startsWith('true', i)) i += 4;
    else if (s.startsWith('false', i)) i += 5;
    else i = scanNumber(s, i);
    // A value ended at i: close containers until one expects another value.
    for (;;) {
      const top = stack[stack.length - 1];
      i = skipWs(s, i);
      if (top === undefined) {
        if (i !== s.length) throw new Fail(i, 'Extra data');
        return;
      }
      const d = s.charCodeAt(i);
      if (d === (top === OBJECT ? 0x7d : 0x5d)) {
        stack.pop();
        i++;
        continue;
      }
      if (d !== 0x2c) throw new Fail(i, "Expecting ',' delimiter");
      i = skipWs(s, i + 1);
      if (top === OBJECT) i = scanKey(s, i);
      break;
    }
  }
}

/** Undefined when Python would accept the body. */
export function pythonJsonError(text: string): JsonDecodeError | undefined {
  try {
    scan(text);
    return undefined;
  } catch (err) {
    if (!(err instanceof Fail)) throw err;
    return { pos: codePoints(text, err.at), msg: err.msg };
  }
}
