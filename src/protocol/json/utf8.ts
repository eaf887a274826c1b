/** Run only on a body buffer.isUtf8 refused, to name the byte; as strict as it and Python's decoder. */
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

/**
 * A JSON body as UTF-8, its encoding told as Python's json.detect_encoding tells it, as FastAPI does
 * (docs/limits-and-edges.md#bom-utf-16-and-lone-surrogates). A lone surrogate is refused: FastAPI would keep it,
 * but it cannot be written as UTF-8 to a backend.
 */
type JsonBytes = { ok: true; buf: Buffer; encoding: string } | { ok: false; encoding: string; offset: number };

type Wide = 'UTF-16LE' | 'UTF-16BE' | 'UTF-32LE' | 'UTF-32BE';

/** json.detect_encoding, and the bytes of BOM to skip. */
function detect(b: Buffer): { encoding: 'UTF-8' | Wide; skip: number } {
  const [b0, b1, b2, b3] = [b[0], b[1], b[2], b[3]];
  if (b0 === 0x00 && b1 === 0x00 && b2 === 0xfe && b3 === 0xff) return { encoding: 'UTF-32BE', skip: 4 };
  if (b0 === 0xff && b1 === 0xfe && b2 === 0x00 && b3 === 0x00) return { encoding: 'UTF-32LE', skip: 4 };
  if (b0 === 0xfe && b1 === 0xff) return { encoding: 'UTF-16BE', skip: 2 };
  if (b0 === 0xff && b1 === 0xfe) return { encoding: 'UTF-16LE', skip: 2 };
  if (b0 === 0xef && b1 === 0xbb && b2 === 0xbf) return { encoding: 'UTF-8', skip: 3 };
  if (b.length >= 4) {
    if (b0 === 0) return { encoding: b1 !== 0 ? 'UTF-16BE' : 'UTF-32BE', skip: 0 };
    if (b1 === 0) return { encoding: b2 !== 0 || b3 !== 0 ? 'UTF-16LE' : 'UTF-32LE', skip: 0 };
  } else if (b.length === 2) {
    if (b0 === 0) return { encoding: 'UTF-16BE', skip: 0 };
    if (b1 === 0) return { encoding: 'UTF-16LE', skip: 0 };
  }
  return { encoding: 'UTF-8', skip: 0 };
}

function put(out: Buffer, o: number, cp: number): number {
  if (cp < 0x80) out[o++] = cp;
  else if (cp < 0x800) {
    out[o++] = 0xc0 | (cp >> 6);
    out[o++] = 0x80 | (cp & 0x3f);
  } else if (cp < 0x10000) {
    out[o++] = 0xe0 | (cp >> 12);
    out[o++] = 0x80 | ((cp >> 6) & 0x3f);
    out[o++] = 0x80 | (cp & 0x3f);
  } else {
    out[o++] = 0xf0 | (cp >> 18);
    out[o++] = 0x80 | ((cp >> 12) & 0x3f);
    out[o++] = 0x80 | ((cp >> 6) & 0x3f);
    out[o++] = 0x80 | (cp & 0x3f);
  }
  return o;
}

function transcode(b: Buffer, encoding: Wide, skip: number): JsonBytes {
  const unit = encoding.startsWith('UTF-16') ? 2 : 4;
  const le = encoding.endsWith('LE');
  if ((b.length - skip) % unit !== 0) return { ok: false, encoding, offset: b.length - ((b.length - skip) % unit) };
  // A UTF-16 unit becomes at most 3 bytes (a pair, 4 bytes, becomes 4); a UTF-32 unit at most 4.
  const out = Buffer.allocUnsafe(((b.length - skip) / unit) * (unit === 2 ? 3 : 4));
  let o = 0;
  for (let i = skip; i < b.length; i += unit) {
    if (unit === 4) {
      const cp = le ? b.readUInt32LE(i) : b.readUInt32BE(i);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return { ok: false, encoding, offset: i };
      o = put(out, o, cp);
      continue;
    }
    const u = le ? b.readUInt16LE(i) : b.readUInt16BE(i);
    if (u < 0xd800 || u > 0xdfff) {
      o = put(out, o, u);
      continue;
    }
    const lo = i + 2 < b.length ? (le ? b.readUInt16LE(i + 2) : b.readUInt16BE(i + 2)) : -1;
    if (u > 0xdbff || lo < 0xdc00 || lo > 0xdfff) return { ok: false, encoding, offset: i };
    o = put(out, o, 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00));
    i += 2;
  }
  return { ok: true, buf: out.subarray(0, o), encoding };
}

export function notDecodedMessage(encoding: string, offset: number): string {
  return `There was an error parsing the body: it is not valid ${encoding} (byte ${offset})`;
}

export function jsonBytesAsUtf8(b: Buffer): JsonBytes {
  const { encoding, skip } = detect(b);
  if (encoding === 'UTF-8') return { ok: true, buf: skip === 0 ? b : b.subarray(skip), encoding };
  return transcode(b, encoding, skip);
}
