/**
 * Shell-style globs (docs/routing.md#routes) in O(text x glob): as a regex a glob backtracks one power per `*`
 * (`*a*a*a*a*a*b` never finishes on a few hundred `a`), so the star algorithm matches it, each middle piece taken
 * at its leftmost place. The regex form stays for validation.
 */
import { GatewayError } from '../errors.js';

type Atom = { kind: 'lit'; cp: string } | { kind: 'any' } | { kind: 'class'; re: RegExp };
type Token = Atom | { kind: 'star' };

interface Parsed {
  tokens: Token[];
  /** Anchored, flags `su`. */
  source: string;
}

/** Escape for a `u` regex, where escaping anything but syntax characters is an error (`\-` only in a class). */
function escapeChar(c: string, inClass = false): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) || (inClass && c === '-') ? '\\' + c : c;
}

/** The `regex` match operator's compile step (unanchored, without flags), for the config loader and the router. */
export function compileRegex(source: string, flags = '', what = 'regex'): RegExp {
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid ${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

const compile = (source: string): RegExp => compileRegex(source, 'su', 'glob');

/** `?` is one code point; a `]` right after `[` or `[!` is a member, as in shells. Throws on a malformed glob. */
function parse(glob: string): Parsed {
  const chars = Array.from(glob); // code points, so `?` is one character even outside the BMP
  const tokens: Token[] = [];
  let source = '^';
  let i = 0;
  for (let c = chars[0]; c !== undefined; c = chars[++i]) {
    if (c === '*') {
      while (chars[i + 1] === '*') i++; // `**` is `*`
      tokens.push({ kind: 'star' });
      source += '.*';
    } else if (c === '?') {
      tokens.push({ kind: 'any' });
      source += '.';
    } else if (c === '\\') {
      const lit = chars[++i];
      if (lit === undefined) throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', 'invalid glob: it ends with a lone "\\"');
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
      for (let m = chars[j]; m !== undefined && (m !== ']' || j === first); m = chars[++j]) {
        const escaped = m === '\\' ? chars[j + 1] : undefined;
        if (escaped !== undefined) {
          m = escaped;
          j++;
        }
        cls += m === '-' && chars[j - 1] !== '\\' ? '-' : escapeChar(m, true);
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

export function globToRegExp(glob: string): RegExp {
  return compile(parse(glob).source);
}

function atomMatches(a: Atom, cp: string): boolean {
  if (a.kind === 'any') return true;
  if (a.kind === 'lit') return a.cp === cp;
  return a.re.test(cp);
}

function pieceAt(piece: Atom[], text: string[], at: number): boolean {
  for (let k = 0; k < piece.length; k++) {
    const a = piece[k];
    const cp = text[at + k];
    if (a === undefined || cp === undefined || !atomMatches(a, cp)) return false;
  }
  return true;
}

export function compileGlob(glob: string): (text: string) => boolean {
  const { tokens, source } = parse(glob);
  compile(source); // the same validation, and the same errors, as globToRegExp
  // The pieces between stars: head before the first, then one after each star; tail is the last of them.
  const head: Atom[] = [];
  const afterStars: Atom[][] = [];
  let tail = head;
  for (const t of tokens) {
    if (t.kind === 'star') afterStars.push((tail = []));
    else tail.push(t);
  }
  const middle = afterStars.slice(0, -1);
  return (input) => {
    const text = Array.from(input);
    if (afterStars.length === 0) return text.length === head.length && pieceAt(head, text, 0);
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
