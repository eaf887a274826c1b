/** 422 details in FastAPI's shape and pydantic 2's words (docs/errors.md#validation-errors-422). */
import type { z } from 'zod';
import { isNumberMark, numberMarkText } from './json/exact-json.js';
import { pythonJsonError } from './json/json-decode-error.js';
import type { ValidationIssue } from './types.js';

type Loc = (string | number)[];

/** pydantic echoes a missing field's parent, megabytes of memory: echoed inputs (and keys in `loc`) are bounded. */
export const INPUT_LIMITS = {
  depth: 3,
  items: 16,
  stringChars: 256,
  /** Approximate JSON characters of the whole echoed value. */
  totalChars: 2048,
} as const;

const MODEL_ATTRIBUTES = 'Input should be a valid dictionary or object to extract fields from';

function truncated(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length - max} more characters)`;
}

/** What is left out is counted in place ("… 84 more items", a "…" key); recursion is at most `depth` deep. */
export function boundInput(value: unknown): unknown {
  return bound(value, 0, { left: INPUT_LIMITS.totalChars });
}

function bound(v: unknown, depth: number, budget: { left: number }): unknown {
  if (isNumberMark(v)) {
    const text = numberMarkText(v);
    budget.left -= text.length;
    return text.length <= 64 ? v : `(a number of ${text.length} characters)`;
  }
  if (typeof v === 'string') {
    const s = truncated(v, Math.max(16, Math.min(INPUT_LIMITS.stringChars, budget.left)));
    budget.left -= s.length + 2;
    return s;
  }
  if (v === null || typeof v !== 'object') {
    budget.left -= 8;
    return v;
  }
  if (Array.isArray(v)) {
    if (depth >= INPUT_LIMITS.depth) return `(a list of ${v.length} items)`;
    const out: unknown[] = [];
    for (const item of v) {
      if (out.length >= INPUT_LIMITS.items || budget.left <= 0) break;
      out.push(bound(item, depth + 1, budget));
    }
    if (out.length < v.length) out.push(`… ${v.length - out.length} more items`);
    return out;
  }
  const keys = Object.keys(v);
  if (depth >= INPUT_LIMITS.depth) return `(an object of ${keys.length} keys)`;
  const out: Record<string, unknown> = {};
  let shown = 0;
  for (const k of keys) {
    if (shown >= INPUT_LIMITS.items || budget.left <= 0) break;
    const key = truncated(k, INPUT_LIMITS.stringChars);
    budget.left -= key.length + 4;
    // defineProperty: a "__proto__" key is data here, as in the body it came from.
    Object.defineProperty(out, key, {
      value: bound(Reflect.get(v, k), depth + 1, budget),
      enumerable: true,
      writable: true,
      configurable: true,
    });
    shown++;
  }
  if (shown < keys.length) out['…'] = `${keys.length - shown} more keys`;
  return out;
}

/** An unknown key can be as long as the body. */
function boundLoc(loc: Loc): Loc {
  return loc.map((p) => (typeof p === 'string' ? truncated(p, INPUT_LIMITS.stringChars) : p));
}

/** pydantic's wording of a literal's choices: `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`. */
function expectedLiterals(values: readonly unknown[]): string {
  const q = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
  return q.length <= 1 ? (q[0] ?? '') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

function at(root: unknown, path: readonly (string | number)[]): unknown {
  let v = root;
  for (const seg of path) {
    if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, seg)) return undefined;
    v = Reflect.get(v, seg);
  }
  return v;
}

function ctxOf(type: string): Record<string, unknown> | undefined {
  if (type === 'string_too_short') return { min_length: 1 };
  if (type === 'greater_than') return { gt: 0 };
  if (type === 'greater_than_equal') return { ge: 0 };
  return undefined;
}

function issueDetail(issue: z.core.$ZodIssue, root: unknown, prefix: Loc): ValidationIssue[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const loc = boundLoc([...prefix, ...path]);
  if (issue.code === 'unrecognized_keys') {
    const obj = at(root, path);
    return issue.keys.map((key) => ({
      type: 'extra_forbidden',
      loc: boundLoc([...prefix, ...path, key]),
      msg: 'Extra inputs are not permitted',
      input: boundInput(at(obj, [key])),
    }));
  }
  const value = at(root, path);
  const present = path.length === 0 ? root !== undefined && root !== null : value !== undefined;
  if (!present) {
    // pydantic echoes the object the field is missing from (FastAPI: null for an empty or `null` body).
    const parent = path.length === 0 ? null : at(root, path.slice(0, -1));
    return [{ type: 'missing', loc, msg: 'Field required', input: boundInput(parent ?? null) }];
  }
  const input = boundInput(value);
  switch (issue.code) {
    case 'custom': {
      const given: unknown = issue.params?.type; // our schemas set it to a string
      const type = typeof given === 'string' ? given : 'value_error';
      const ctx = ctxOf(type);
      return [{ type, loc, msg: issue.message, input, ...(ctx ? { ctx } : {}) }];
    }
    case 'invalid_type':
      // Only the contract's models are zod objects (free-form objects are `custom`): FastAPI validates them
      // with from_attributes, hence model_attributes_type rather than dict_type.
      if (issue.expected === 'object') return [{ type: 'model_attributes_type', loc, msg: MODEL_ATTRIBUTES, input }];
      if (issue.expected === 'array') return [{ type: 'list_type', loc, msg: 'Input should be a valid list', input }];
      return [{ type: `${issue.expected}_type`, loc, msg: issue.message, input }];
    case 'invalid_value': {
      const expected = expectedLiterals(issue.values);
      return [{ type: 'literal_error', loc, msg: `Input should be ${expected}`, input, ctx: { expected } }];
    }
    default:
      return [{ type: 'value_error', loc, msg: issue.message, input }];
  }
}

export function zodToDetail(error: z.ZodError, root?: unknown, prefix: Loc = ['body']): ValidationIssue[] {
  return error.issues.flatMap((issue) => issueDetail(issue, root, prefix));
}

/** As FastAPI builds it; `fallback` (JSON.parse's) is used only if Python's scanner finds nothing wrong. */
export function jsonInvalidDetail(text: string, fallback: { position: number; message: string }): ValidationIssue {
  if (text.length === 0) return { type: 'missing', loc: ['body'], msg: 'Field required', input: null };
  const e = pythonJsonError(text) ?? { pos: fallback.position, msg: fallback.message };
  return { type: 'json_invalid', loc: ['body', e.pos], msg: 'JSON decode error', input: {}, ctx: { error: e.msg } };
}
