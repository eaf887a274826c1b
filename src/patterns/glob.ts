/**
 * Shell-style globs for the `glob` match operator (docs/routing.md#routes), matched in O(text x glob) time.
 *
 * A glob turned into a regex (`kitchen-*-*-v?` -> `^kitchen-.*-.*-v.$`) backtracks polynomially in the text's
 * length, one power per `*` (`*a*a*a*a*a*b` never finishes on a few hundred `a`), and the text comes from
 * clients. So the glob is matched by the classic star algorithm instead: the pieces between stars must appear
 * in order, the first at the start and the last at the end, and taking each middle piece at its leftmost place
 * is always right. The regex form stays for validation and for anyone who wants to see the glob as a regex.
 */
import { GatewayError } from '../errors.js';

type Atom = { kind: 'lit'; cp: string } | { kind: 'any' } | { kind: 'class'; re: RegExp };
type Token = Atom | { kind: 'star' };

interface Parsed {
  tokens: Token[];
  /** The same glob as an anchored regex source (flags `su`). */
  source: string;
}

/** Escape for a `u` regex, where escaping anything but syntax characters is an error (`\-` only in a class). */
function escapeChar(c: string, inClass = false): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) || (inClass && c === '-') ? '\\' + c : c;
}

function compile(source: string): RegExp {
  try {
    return new RegExp(source, 'su');
  } catch (err) {
    throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid glob: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * `*` any run of characters (also empty, also newlines), `?` one character (a code point), `[abc]`, `[a-z]`,
 * `[!abc]` / `[^abc]` a character class (a `]` right after `[` or `[!` is a member, as in shells), `\x` a
 * literal `x`. Throws on a malformed glob so the config loader can report it with its position.
 */
function parse(glob: string): Parsed {
  const chars = Array.from(glob); // code points, so `?` is one character even outside the BMP
  const tokens: Token[] = [];
  let source = '^';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!; // i < chars.length (loop bound)
    if (c === '*') {
      while (chars[i + 1] === '*') i++; // `**` is `*`
      tokens.push({ kind: 'star' });
      source += '.*';
    } else if (c === '?') {
      tokens.push({ kind: 'any' });
      source += '.';
    } else if (c === '\\') {
      if (i + 1 >= chars.length) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', 'invalid glob: it ends with a lone "\\"');
      const lit = chars[++i]!; // i + 1 < chars.length, checked above
      tokens.push({ kind: 'lit', cp: lit });
      source += escapeChar(lit);
    } else if (c === '[') {
      let j = i + 1;
      let cls = '';
      if (chars[j] === '!' || chars[j] === '^') {
        cls = '^';
        j++;
      }
      const first = j;
      while (j < chars.length && (chars[j] !== ']' || j === first)) {
        const m = chars[j] === '\\' && j + 1 < chars.length ? chars[++j]! : chars[j]!; // j < chars.length, checked above
        cls += m === '-' && chars[j - 1] !== '\\' ? '-' : escapeChar(m, true);
        j++;
      }
      if (j >= chars.length) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid glob: the "[" at character ${i + 1} is never closed`);
      // One class alone never backtracks: testing one code point against it is constant time.
      tokens.push({ kind: 'class', re: compile(`^[${cls}]$`) });
      source += `[${cls}]`;
      i = j;
    } else {
      tokens.push({ kind: 'lit', cp: c });
      source += escapeChar(c);
    }
  }
  return { tokens, source: source + '$' };
}

/** The glob as an anchored RegExp (validation, tests). Throws on a malformed glob. */
export function globToRegExp(glob: string): RegExp {
  return compile(parse(glob).source);
}

function atomMatches(a: Atom, cp: string): boolean {
  if (a.kind === 'any') return true;
  if (a.kind === 'lit') return a.cp === cp;
  return a.re.test(cp);
}

/** `piece` matches the code points of `text` starting at `at`. */
function pieceAt(piece: Atom[], text: string[], at: number): boolean {
  for (let k = 0; k < piece.length; k++) if (!atomMatches(piece[k]!, text[at + k]!)) return false; // k < piece.length and at + piece.length <= text.length
  return true;
}

/** A predicate matching the whole text against the glob. Throws on a malformed glob. */
export function compileGlob(glob: string): (text: string) => boolean {
  const { tokens, source } = parse(glob);
  compile(source); // the same validation, and the same errors, as globToRegExp
  const pieces: Atom[][] = [[]];
  for (const t of tokens) {
    if (t.kind === 'star') pieces.push([]);
    else pieces[pieces.length - 1]!.push(t); // pieces is non-empty (split returns at least one)
  }
  const head = pieces[0]!; // pieces is non-empty (split returns at least one)
  const tail = pieces[pieces.length - 1]!; // pieces is non-empty (split returns at least one)
  const middle = pieces.slice(1, -1);
  return (input) => {
    const text = Array.from(input);
    if (pieces.length === 1) return text.length === head.length && pieceAt(head, text, 0);
    const end = text.length - tail.length;
    if (end < head.length || !pieceAt(head, text, 0) || !pieceAt(tail, text, end)) return false;
    let pos = head.length;
    for (const piece of middle) {
      let at = pos;
      while (at + piece.length <= end && !pieceAt(piece, text, at)) at++;
      if (at + piece.length > end) return false;
      pos = at + piece.length;
    }
    return true;
  };
}
