/**
 * zod issues -> FastAPI's 422 body `{"detail": [{type, loc, msg, input}]}` (ecosystem-facts.md, "Reference
 * servers' behaviour"), so clients that print FastAPI errors print ours the same way. Inputs may hold number
 * markers: the body must be written with stringifyExact, which restores the numbers as they were sent.
 */
import type { z } from 'zod';
import type { ValidationIssue } from './types.js';

type Loc = (string | number)[];

function pydanticType(issue: z.core.$ZodIssue, missing: boolean): string {
  if (missing) return 'missing';
  switch (issue.code) {
    case 'custom':
      return (issue.params?.type as string | undefined) ?? 'value_error';
    case 'invalid_type':
      if (issue.expected === 'object') return 'dict_type';
      if (issue.expected === 'array') return 'list_type';
      return `${issue.expected}_type`;
    case 'invalid_value':
      return 'literal_error';
    case 'too_small':
      return issue.origin === 'string' ? 'string_too_short' : 'too_short';
    default:
      return 'value_error';
  }
}

export function zodToDetail(error: z.ZodError, prefix: Loc = ['body']): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const issue of error.issues) {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      const obj = issue.input as Record<string, unknown> | undefined;
      for (const key of issue.keys) {
        out.push({
          type: 'extra_forbidden',
          loc: [...prefix, ...path, key],
          msg: 'Extra inputs are not permitted',
          input: obj?.[key],
        });
      }
      continue;
    }
    const missing = !('input' in issue) || issue.input === undefined;
    out.push({
      type: pydanticType(issue, missing),
      loc: [...prefix, ...path],
      msg: missing ? 'Field required' : issue.message,
      input: missing ? undefined : issue.input,
    });
  }
  return out;
}
