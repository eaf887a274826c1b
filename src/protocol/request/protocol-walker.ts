/** The request and answer indexers' walk: a callback per member or element returns the offset past its value. */
import { IndexReject, JsonScanner, type NumberToken } from '../json/json-index.js';
import type { MemoryLayout, TagSpan } from '../memory-tag.js';
import { COMMA, RBRACKET, RBRACE } from '../json/json-bytes.js';

/** server.max_memory_key_repeats: a client re-sending its tag repeats the key a few times, not millions. */
export const DEFAULT_MAX_MEMORY_KEY_REPEATS = 16;

/**
 * A memory naming memory_key more than server.max_memory_key_repeats times, refused when the next one is met: each
 * is a recorded position, held uncounted by the memory budget. `owner`: the input's or element's place in its list.
 */
export class MemoryKeyRepeats extends IndexReject {
  constructor(
    at: number,
    readonly owner: number,
    readonly memoryKey: string,
    readonly max: number,
  ) {
    super(at, `memory repeats the key ${JSON.stringify(memoryKey)} more than ${max} times (server.max_memory_key_repeats)`);
  }
}

/** The config has one memory key or a few, and every body's two walks need their bytes. */
const keyBytes = new Map<string, Buffer>();

function memoryKeyBytes(memoryKey: string): Buffer {
  let b = keyBytes.get(memoryKey);
  if (b === undefined) {
    b = Buffer.from(JSON.stringify(memoryKey).slice(1, -1), 'utf8');
    // Bounded by what configs name; a test building many keys is not a reason to grow without end.
    if (keyBytes.size < 64) keyBytes.set(memoryKey, b);
  }
  return b;
}

export abstract class ProtocolWalker {
  protected readonly s: JsonScanner;
  /** The member key last read. */
  protected readonly key = { start: 0, end: 0 };
  protected readonly tok: NumberToken = { start: 0, end: 0, integer: true, negative: false };
  /** The memory key between quotes, written without escapes. */
  protected readonly memoryKeyBytes: Buffer;
  /** The input or element whose memory is walked, for MemoryKeyRepeats. */
  protected memoryOwner = -1;

  constructor(
    readonly buf: Buffer,
    readonly maxDepth: number,
    readonly memoryKey: string,
    readonly maxKeyRepeats: number = DEFAULT_MAX_MEMORY_KEY_REPEATS,
  ) {
    this.s = new JsonScanner(buf, maxDepth);
    this.memoryKeyBytes = memoryKeyBytes(memoryKey);
  }

  protected open(p: number, depth: number): void {
    if (depth > this.maxDepth) throw new IndexReject(p, 'nested too deep');
  }

  /** With `names` false keys are not decoded (memory: thousands nobody reads by name) and onMember gets ''. */
  protected members(p: number, depth: number, onMember: (name: string, v: number) => number, names = true): number {
    const s = this.s;
    this.open(p, depth);
    let q = s.ws(p + 1);
    if (s.at(q) === RBRACE) return q + 1;
    for (;;) {
      const v = s.memberKey(q, this.key);
      const { start, end } = this.key;
      const name = !names ? '' : s.escaped ? s.text(start, end, true) : s.latin1(start + 1, end - 1);
      q = s.ws(onMember(name, v));
      const c = s.at(q);
      if (c === RBRACE) return q + 1;
      if (c !== COMMA) throw new IndexReject(q, "expected ',' or '}'");
      q++;
    }
  }

  /** A memory object's edges and its members named memory_key; `value(v)` reads each member's value. */
  protected memoryLayout(p: number, depth: number, value: (v: number) => number): MemoryLayout & { end: number } {
    const s = this.s;
    const key = this.key;
    const tags: TagSpan[] = [];
    let count = 0;
    let firstKeyStart = -1;
    let lastValueEnd = -1;
    let lastTag: TagSpan | undefined;
    const end = this.members(p, depth, (_name, v) => {
      const keyStart = key.start;
      const keyEnd = key.end;
      const escaped = s.escaped;
      const e = value(v);
      if (lastTag !== undefined) {
        lastTag.nextStart = keyStart;
        lastTag = undefined;
      }
      if (this.isMemoryKey(keyStart, keyEnd, escaped)) {
        if (tags.length >= this.maxKeyRepeats) throw new MemoryKeyRepeats(keyStart, this.memoryOwner, this.memoryKey, this.maxKeyRepeats);
        lastTag = { keyStart, valueStart: v, valueEnd: e, prevEnd: count === 0 ? -1 : lastValueEnd, nextStart: -1 };
        tags.push(lastTag);
      }
      if (count === 0) firstKeyStart = keyStart;
      lastValueEnd = e;
      count++;
      return e;
    }, false);
    return { start: p, end, count, firstKeyStart, lastValueEnd, tags };
  }

  /** Escaped keys compare as text. */
  private isMemoryKey(keyStart: number, keyEnd: number, escaped: boolean): boolean {
    if (escaped) return this.s.text(keyStart, keyEnd, true) === this.memoryKey;
    const k = this.memoryKeyBytes;
    return keyEnd - keyStart - 2 === k.length && this.buf.compare(k, 0, k.length, keyStart + 1, keyEnd - 1) === 0;
  }

  protected elements(p: number, depth: number, onElement: (q: number) => number): number {
    const s = this.s;
    this.open(p, depth);
    let q = s.ws(p + 1);
    if (s.at(q) === RBRACKET) return q + 1;
    for (;;) {
      q = s.ws(onElement(s.ws(q)));
      const c = s.at(q);
      if (c === RBRACKET) return q + 1;
      if (c !== COMMA) throw new IndexReject(q, "expected ',' or ']'");
      q++;
    }
  }
}
