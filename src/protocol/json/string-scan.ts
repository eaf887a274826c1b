/**
 * Where a JSON string ends, found sixteen bytes at a time by a WebAssembly SIMD loop (string-scan.wat). Strings
 * are most of a batch's bytes (a memory's history), with a quote or backslash every 20 bytes or so; JavaScript reads
 * a 32-bit word at best and branches at every such byte, this reads sixteen and steps over the escapes in place, about
 * twice as fast on S2's bodies (docs/performance.md). No library offers a string scan that reports positions in a
 * Buffer, hence this one (about 60 lines of WebAssembly text).
 *
 * The bytes are copied into the module's memory a window at a time (at most WINDOW_BYTES), so its memory stays
 * bounded whatever the body's size; a string running past a window goes on in the next.
 */
import { ESCAPES, HEX } from './json-bytes.js';
import { STRING_SCAN_WASM } from './string-scan-wasm.js';

/** The window's first byte in the module's memory: below it, the escape and hex tables. */
const DATA = 512;
/** Zero bytes after a window: the scan stops at the first, and a 16-byte read from anywhere before it stays inside. */
const PAD = 32;
const WINDOW_BYTES = 1024 * 1024;

/** What `end` found when it is not a closing quote: the byte is at `at`. */
export const CONTROL = -2;
export const ESCAPE = -3;

interface Exports {
  memory: WebAssembly.Memory;
  errAt: { readonly value: number };
  escSeen: { readonly value: number };
  stringEnd: (p: number) => number;
}

function instantiate(windowBytes: number): Exports | undefined {
  try {
    const mod = new WebAssembly.Module(Buffer.from(STRING_SCAN_WASM, 'base64'));
    // The module's exports are these four by construction (string-scan.wat); WebAssembly types them as unknowns.
    const exports = new WebAssembly.Instance(mod).exports as unknown as Exports;
    exports.memory.grow(Math.ceil((DATA + windowBytes + PAD) / 65536));
    new Uint8Array(exports.memory.buffer).set(ESCAPES, 0);
    new Uint8Array(exports.memory.buffer).set(HEX, 256);
    return exports;
  } catch {
    // node --jitless has no WebAssembly: json-index.ts reads byte by byte.
    return undefined;
  }
}

let owners = 0;

/** A number for a new owner of the window (a scan of one body, or of one chunk). */
export const newOwner = (): number => ++owners;

export class StringScan {
  /** After `end`: the string held an escape before the stop. */
  escaped = false;
  /** After `end` returned CONTROL or ESCAPE: where. CONTROL at or past the bytes' length is their end. */
  at = 0;
  private readonly mem: Uint8Array;
  /** The owner (newOwner) whose bytes the window holds. */
  private owner = 0;
  private start = 0;
  private stop = 0;

  constructor(
    private readonly wasm: Exports,
    private readonly windowBytes: number,
  ) {
    this.mem = new Uint8Array(wasm.memory.buffer);
  }

  /** The closing quote of the string whose interior starts at `p` in `buf`, else CONTROL or ESCAPE. */
  end(owner: number, buf: Uint8Array, p: number): number {
    let escaped = false;
    for (;;) {
      if (owner !== this.owner || p < this.start || p >= this.stop) this.load(owner, buf, p);
      const r = this.wasm.stringEnd(p - this.start + DATA);
      if (r >= 0) {
        this.escaped = escaped || (r & 1) === 1;
        return (r >>> 1) - DATA + this.start;
      }
      this.escaped = escaped ||= this.wasm.escSeen.value !== 0;
      const at = this.wasm.errAt.value - DATA + this.start;
      // The zeros after a window that is not the last: the string goes on in the next one.
      if (r === CONTROL && at === this.stop && at < buf.length) {
        p = at;
        continue;
      }
      this.at = at;
      return r;
    }
  }

  private load(owner: number, buf: Uint8Array, p: number): void {
    const stop = Math.min(buf.length, p + this.windowBytes);
    this.mem.set(buf.subarray(p, stop), DATA);
    this.mem.fill(0, DATA + stop - p, DATA + stop - p + PAD);
    this.owner = owner;
    this.start = p;
    this.stop = stop;
  }
}

/** A scan of its own, with its own memory (tests use small windows to cross their edges often). */
export function createStringScan(windowBytes = WINDOW_BYTES): StringScan | undefined {
  const wasm = instantiate(windowBytes);
  return wasm === undefined ? undefined : new StringScan(wasm, windowBytes);
}

/** One per thread (module state): a scan is synchronous, and whoever scans last owns the window. */
export const stringScan = createStringScan();
