/** What a coaching call builds over its body, charged before it is built (docs/memory-budget.md#what-is-counted). */
import { BACKSLASH, QUOTE } from '../protocol/json/json-bytes.js';

const JSON_OBJECT_BYTES = 32;
const JSON_ARRAY_BYTES = 32;
const JSON_PROPERTY_BYTES = 16;
const JSON_ELEMENT_BYTES = 8;
const JSON_NUMBER_BYTES = 16;
/** A string's header; its characters are counted besides, one byte each, two in a string with any beyond U+00FF. */
const JSON_STRING_BYTES = 16;

/**
 * What JSON.parse builds over `text`, by one pass. An upper estimate: an escape counts as the characters it is
 * written with, and every key as a string of its own (V8 shares repeated ones).
 */
export function jsonTreeEstimate(text: string): number {
  let total = 0;
  let inString = false;
  let chars = 0;
  let wide = false;
  let inNumber = false;
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
    if (starts && !inNumber) total += JSON_NUMBER_BYTES;
    inNumber = inNumber ? starts || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45 : starts;
    if (c === QUOTE) {
      inString = true;
      chars = 0;
      wide = false;
    } else if (c === 0x7b) total += JSON_OBJECT_BYTES;
    else if (c === 0x5b) total += JSON_ARRAY_BYTES;
    else if (c === 0x3a) total += JSON_PROPERTY_BYTES;
    else if (c === 0x2c) total += JSON_ELEMENT_BYTES;
  }
  return total;
}

/** The parsed tree, and the text written back from it for the backend (two-byte characters at worst). */
export function coachingObjectsEstimate(text: string): number {
  return jsonTreeEstimate(text) + 2 * text.length;
}
