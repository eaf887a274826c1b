/** What a coaching call builds over its body, charged before it is built (docs/memory-budget.md#what-is-counted). */
import { BACKSLASH, QUOTE } from '../protocol/json/json-bytes.js';

/**
 * Measured over arrays of 100,000+ of each shape (`node --expose-gc`, heapUsed after parseExact + stringifyExact,
 * less before): `{}` 67 bytes with its slot, `[[]]` 101, `{"k<n>":0}` with a key of its own 173 (each such object
 * gets a hidden class of its own).
 */
const JSON_OBJECT_BYTES = 64;
const JSON_ARRAY_BYTES = 56;
const JSON_PROPERTY_BYTES = 72;
const JSON_ELEMENT_BYTES = 8;
const JSON_NUMBER_BYTES = 16;
/** A string's header; its characters are counted besides, one byte each, two in a string with any beyond U+00FF. */
const JSON_STRING_BYTES = 16;
/**
 * A number JSON.parse would not give back as written (`1.0`, a big integer) is kept exactly as a marker string of
 * about 33 two-byte characters plus its digits: in the tree, in the rewrite's pieces, and in the text written with
 * markers. Measured 344 bytes for a 20-digit integer; charged 338 plus 6 a digit.
 */
const MARKED_NUMBER_BYTES = 338;
const MARKED_NUMBER_CHAR_BYTES = 6;

/**
 * What parseExact builds over `text`, by one pass. An upper estimate: an escape counts as the characters it is
 * written with, and every key as a string of its own (V8 shares repeated ones). Once a number is marked, the text
 * is rewritten with its markers, and written so before they are taken out: two two-byte copies more.
 */
export function jsonTreeEstimate(text: string): number {
  let total = 0;
  let inString = false;
  let chars = 0;
  let wide = false;
  let numberAt = -1;
  let marked = false;
  const numberEnds = (end: number): void => {
    const tok = text.slice(numberAt, end);
    numberAt = -1;
    if (String(Number(tok)) === tok) return;
    total += MARKED_NUMBER_BYTES + MARKED_NUMBER_CHAR_BYTES * tok.length;
    marked = true;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === QUOTE) {
        inString = false;
        total += JSON_STRING_BYTES + (wide ? 2 * chars : chars);
        continue;
      }
      if (c === BACKSLASH) i++;
      else if (c > 0xff) wide = true;
      chars++;
      continue;
    }
    // A number starts with a digit or `-` outside strings and runs on over digits, `.`, `e`, `E`, `+` and `-`.
    const starts = (c >= 0x30 && c <= 0x39) || c === 0x2d;
    if (numberAt !== -1 && !(starts || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45)) numberEnds(i);
    else if (starts && numberAt === -1) {
      total += JSON_NUMBER_BYTES;
      numberAt = i;
    }
    if (c === QUOTE) {
      inString = true;
      chars = 0;
      wide = false;
    } else if (c === 0x7b) total += JSON_OBJECT_BYTES;
    else if (c === 0x5b) total += JSON_ARRAY_BYTES;
    else if (c === 0x3a) total += JSON_PROPERTY_BYTES;
    else if (c === 0x2c) total += JSON_ELEMENT_BYTES;
  }
  if (numberAt !== -1) numberEnds(text.length);
  return marked ? total + 4 * text.length : total;
}

/** The parsed tree, and the text written back from it for the backend (two-byte characters at worst). */
export function coachingObjectsEstimate(text: string): number {
  return jsonTreeEstimate(text) + 2 * text.length;
}
