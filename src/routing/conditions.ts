/**
 * One match condition (docs/routing.md#routes) as a predicate; `undefined` is an absent key. Against a list, a value,
 * `in`, `glob` and `regex` hold when some element does; numbers compare by value (`7`, `7.0`, a marker for `7.0`);
 * text operators look at strings only; `not: x` holds when the key is absent; `exists` counts `null` as present.
 */
import type { Condition, Scalar } from '../config/schema.js';
import { isNumberMark, numericValue } from '../protocol/json/exact-json.js';
import { compileGlob, compileRegex } from '../patterns/glob.js';

export type Predicate = (value: unknown) => boolean;

interface ConditionOptions {
  /** Header values are text: a config number or boolean compares to its text (`header.x-tier: 2` is "2"). */
  textual?: boolean;
}

/** Not a number marker standing for a JSON number. */
function isText(v: unknown): v is string {
  return typeof v === 'string' && !isNumberMark(v);
}

/** An operator's own regex can take polynomial (a careless one: exponential) time in the client's text. */
export const PATTERN_MAX_CHARS = 4096;

function isPatternText(v: unknown): v is string {
  return isText(v) && v.length <= PATTERN_MAX_CHARS;
}

function some(v: unknown, pred: Predicate): boolean {
  if (Array.isArray(v)) return v.some(pred);
  return v !== undefined && pred(v);
}

function equals(expected: Scalar): Predicate {
  if (typeof expected === 'number') return (a) => numericValue(a) === expected;
  return (a) => a === expected;
}

/** Throws on an invalid glob or regex (the loader reports it at the condition's path). */
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
    const matches = compileGlob(cond.glob);
    checks.push((v) => some(v, (e) => isPatternText(e) && matches(e)));
  }
  if (cond.regex !== undefined) {
    const re = compileRegex(cond.regex);
    checks.push((v) => some(v, (e) => isPatternText(e) && re.test(e)));
  }
  if (cond.exists !== undefined) {
    const want = cond.exists;
    checks.push((v) => (v !== undefined) === want);
  }
  if (cond.contains !== undefined) {
    const x = norm(cond.contains);
    const eq = equals(x);
    checks.push((v) => (Array.isArray(v) ? v.some(eq) : typeof x === 'string' && isText(v) && v.includes(x)));
  }
  if (cond.not !== undefined) {
    const eq = equals(norm(cond.not));
    checks.push((v) => !some(v, eq));
  }
  const [only, ...more] = checks;
  if (only !== undefined && more.length === 0) return only;
  return (v) => checks.every((check) => check(v));
}
