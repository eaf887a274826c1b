/**
 * Where a body stops being UTF-8. The check itself is buffer.isUtf8 (native, run on every body); this scan runs
 * only on a body it refused, to name the offending byte in the answer (docs/protocol-fidelity.md#how-a-batch-is-read).
 * Strict as isUtf8 and Python's decoder: no overlong forms, no surrogates, nothing above U+10FFFF.
 */

/** Offset of the first byte that does not begin a well-formed UTF-8 sequence, or -1 when there is none. */
export function firstInvalidUtf8(buf: Uint8Array): number {
  const n = buf.length;
  let i = 0;
  while (i < n) {
    const c = buf[i] ?? 0;
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0; // overlong
      if (c === 0xed) hi = 0x9f; // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90; // overlong
      if (c === 0xf4) hi = 0x8f; // above U+10FFFF
    } else return i;
    for (let k = 1; k <= need; k++) {
      const d = i + k < n ? (buf[i + k] ?? -1) : -1;
      if (k === 1 ? d < lo || d > hi : d < 0x80 || d > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}
