/**
 * One match condition (README "Routes") compiled into a predicate over the value its key resolved to.
 *
 * Compiling happens once per config: globs and regexes become RegExp objects here, so the per-input hot path
 * only runs predicates. A predicate receives `undefined` when the key is absent in the input.
 *
 * Semantics, the same for every key:
 * - a plain value is equality; against a list (tools, robots, a list attribute, a repeated header) it is
 *   membership, i.e. some element is equal; `in`, `glob` and `regex` likewise hold when some element does;
 * - numbers compare by value: `7`, `7.0` and a number marker for `7.0` are equal (`numericValue`);
 * - text operators (`glob`, `regex`, string `contains`) only look at strings, never at numbers or markers;
 * - `not: x` is exactly the negation of the plain value `x`, so it holds when the key is absent;
 * - `exists` looks at presence only: `null` is present.
 */
import type { Condition, Scalar } from '../config/schema.js';
import { isNumberMark, numericValue } from '../protocol/exact-json.js';

export type Predicate = (value: unknown) => boolean;

export interface ConditionOptions {
  /** Header values are text: a config number or boolean compares to its text (`header.x-tier: 2` is "2"). */
  textual?: boolean;
}

/** A string that is text, not a number marker standing for a JSON number. */
function isText(v: unknown): v is string {
  return typeof v === 'string' && !isNumberMark(v);
}

/** Holds for the value itself, or for some element when the value is a list; never for an absent value. */
function some(v: unknown, pred: Predicate): boolean {
  if (Array.isArray(v)) return v.some(pred);
  return v !== undefined && pred(v);
}

function equals(expected: Scalar): Predicate {
  if (typeof expected === 'number') return (a) => numericValue(a) === expected;
  if (typeof expected === 'string') return (a) => a === expected;
  return (a) => a === expected;
}

/**
 * A shell-style glob, anchored at both ends: `*` any run of characters (also empty, also newlines), `?` one
 * character, `[abc]`, `[a-z]`, `[!abc]` / `[^abc]` a character class, `\x` a literal `x`. Throws on a malformed
 * glob so the config loader can report it with its position.
 */
export function globToRegExp(glob: string): RegExp {
  const chars = Array.from(glob); // code points, so `?` is one character even outside the BMP
  let re = '^';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '*') {
      while (chars[i + 1] === '*') i++; // `**` is `*`: runs of `.*` only add backtracking
      re += '.*';
    } else if (c === '?') re += '.';
    else if (c === '\\') {
      if (i + 1 >= chars.length) throw new Error('invalid glob: it ends with a lone "\\"');
      re += escapeChar(chars[++i]!);
    } else if (c === '[') {
      let j = i + 1;
      let cls = '';
      if (chars[j] === '!' || chars[j] === '^') {
        cls = '^';
        j++;
      }
      const first = j;
      // A `]` right after `[` or `[!` is a member, as in shells.
      while (j < chars.length && (chars[j] !== ']' || j === first)) {
        const m = chars[j] === '\\' && j + 1 < chars.length ? chars[++j]! : chars[j]!;
        cls += m === '-' && chars[j - 1] !== '\\' ? '-' : escapeChar(m, true);
        j++;
      }
      if (j >= chars.length) throw new Error(`invalid glob: the "[" at character ${i + 1} is never closed`);
      re += `[${cls}]`;
      i = j;
    } else re += escapeChar(c);
  }
  try {
    return new RegExp(re + '$', 'su');
  } catch (err) {
    throw new Error(`invalid glob: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** Escape for a `u` regex, where escaping anything but syntax characters is an error (`\-` only in a class). */
function escapeChar(c: string, inClass = false): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) || (inClass && c === '-') ? '\\' + c : c;
}

/** A JavaScript regular expression, unanchored (use `^...$` to anchor), without flags. */
export function compileRegex(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (err) {
    throw new Error(`invalid regex: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** Compile a condition; throws on an invalid glob or regex (the loader reports it at the condition's path). */
export function compileCondition(cond: Condition, opts: ConditionOptions = {}): Predicate {
  const norm = (x: Scalar): Scalar => (opts.textual === true && x !== null ? String(x) : x);
  if (cond === null || typeof cond !== 'object') {
    const eq = equals(norm(cond));
    return (v) => some(v, eq);
  }
  const checks: Predicate[] = [];
  if (cond.in !== undefined) {
    const eqs = cond.in.map((x) => equals(norm(x)));
    checks.push((v) => some(v, (e) => eqs.some((eq) => eq(e))));
  }
  if (cond.glob !== undefined) {
    const re = globToRegExp(cond.glob);
    checks.push((v) => some(v, (e) => isText(e) && re.test(e)));
  }
  if (cond.regex !== undefined) {
    const re = compileRegex(cond.regex);
    checks.push((v) => some(v, (e) => isText(e) && re.test(e)));
  }
  if (cond.exists !== undefined) {
    const want = cond.exists;
    checks.push((v) => (v !== undefined) === want);
  }
  if (cond.contains !== undefined) {
    const x = norm(cond.contains);
    const eq = equals(x);
    // A list contains an element; a string contains a substring.
    checks.push((v) => (Array.isArray(v) ? v.some(eq) : typeof x === 'string' && isText(v) && v.includes(x)));
  }
  if (cond.not !== undefined) {
    const eq = equals(norm(cond.not));
    checks.push((v) => !some(v, eq));
  }
  if (checks.length === 1) return checks[0]!;
  return (v) => checks.every((check) => check(v));
}
