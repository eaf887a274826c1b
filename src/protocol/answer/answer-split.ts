/**
 * A backend's answer array cut into its elements as its bytes arrive (docs/protocol-fidelity.md#streamed-answers);
 * each element is then proved by the byte indexer, so what is accepted is what indexing the whole answer accepts.
 */
import { QUOTE, BACKSLASH, COMMA, LBRACKET, RBRACKET, LBRACE, RBRACE } from '../json/json-bytes.js';
import { newOwner, stringScan } from '../json/string-scan.js';

const BOM = [0xef, 0xbb, 0xbf];

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** `first`: after `[`, an element or `]`; `next`: after a `,`, an element only. */
type State = 'start' | 'first' | 'next' | 'element' | 'end';

export class ElementSplitter {
  private state: State = 'start';
  private seen = 0;
  private depth = 0;
  private inString = false;
  private escape = false;
  private pieces: Buffer[] = [];
  private pieceBytes = 0;
  problem: string | undefined;

  /** `onElement` gets each element as a one-element JSON array, `[` + its bytes + `]`, in answer order. */
  constructor(private readonly onElement: (wrapped: Buffer) => void) {}

  get closed(): boolean {
    return this.state === 'end';
  }

  /** Split what `chunk` completes; returns false once the answer is found not to be an array of values. */
  write(chunk: Buffer): boolean {
    if (this.problem !== undefined) return false;
    const n = chunk.length;
    let i = 0;
    let from = 0;
    const owner = newOwner();
    while (i < n) {
      const state = this.state;
      if (state === 'element') {
        if (this.inString) {
          if (this.escape) {
            this.escape = false;
            i++;
            continue;
          }
          // Long strings (memory) are crossed sixteen bytes at a time, escapes stepped over on the way; what is not
          // valid in them is the element's indexer's to refuse.
          for (;;) {
            i = stringStop(owner, chunk, i);
            if (i === n || chunk[i] === QUOTE) break;
            if (chunk[i] !== BACKSLASH) {
              i++;
              continue;
            }
            if (i + 1 === n) {
              this.escape = true;
              i = n;
              break;
            }
            i += 2;
          }
          if (i === n) break;
          this.inString = false;
          i++;
          continue;
        }
        const c = chunk[i]!; // i < n; a per-byte scan, kept without an undefined branch
        if (c === QUOTE) this.inString = true;
        else if (c === LBRACE || c === LBRACKET) this.depth++;
        else if ((c === RBRACE || c === RBRACKET) && this.depth > 0) this.depth--;
        else if (this.depth === 0 && (c === COMMA || c === RBRACKET)) {
          this.emit(chunk.subarray(from, i));
          if (this.problem !== undefined) return false;
          this.state = c === COMMA ? 'next' : 'end';
        }
        i++;
        continue;
      }
      const c = chunk[i]!; // i < n; a per-byte scan, kept without an undefined branch
      if (state === 'start' && (this.seen < BOM.length && (c === BOM[this.seen] || this.seen > 0))) {
        if (c !== BOM[this.seen]) return this.fail('the answer is not a JSON array');
        this.seen++;
        i++;
        continue;
      }
      this.seen = BOM.length;
      if (isWs(c)) {
        i++;
        continue;
      }
      if (state === 'start') {
        if (c !== LBRACKET) return this.fail('the answer is not a JSON array');
        this.state = 'first';
        i++;
      } else if (state === 'first' && c === RBRACKET) {
        this.state = 'end';
        i++;
      } else if (state === 'end') {
        return this.fail('extra data after the JSON value');
      } else if (state === 'next' && c === RBRACKET) {
        return this.fail('a value is missing after a comma');
      } else {
        this.state = 'element';
        this.depth = 0;
        from = i;
      }
    }
    if (this.state === 'element' && from < n) this.keep(chunk.subarray(from, n));
    return true;
  }

  stop(reason: string): void {
    this.problem ??= reason;
    this.pieces = [];
    this.pieceBytes = 0;
  }

  private fail(reason: string): false {
    this.stop(reason);
    return false;
  }

  private keep(b: Buffer): void {
    this.pieces.push(b);
    this.pieceBytes += b.length;
  }

  private emit(last: Buffer): void {
    const total = this.pieceBytes + last.length;
    const wrapped = Buffer.allocUnsafe(total + 2);
    wrapped[0] = LBRACKET;
    let at = 1;
    for (const p of this.pieces) at += p.copy(wrapped, at);
    last.copy(wrapped, at);
    wrapped[total + 1] = RBRACKET;
    this.pieces = [];
    this.pieceBytes = 0;
    this.onElement(wrapped);
  }
}

/** The closing quote of the string `b` is in from `p`, a byte the scan stops at inside it, or `b.length`. */
function stringStop(owner: number, b: Buffer, p: number): number {
  if (stringScan !== undefined) {
    const r = stringScan.end(owner, b, p);
    return r >= 0 ? r : stringScan.at; // a control character, a backslash, or b.length
  }
  while (p < b.length && b[p] !== QUOTE && b[p] !== BACKSLASH) p++;
  return p;
}
