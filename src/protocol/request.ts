/**
 * Parse and validate a `POST /v1/responses` body as the contract's AgentRequest (README "What happens to a batch", steps 1-2).
 * Invalid bodies become FastAPI-style 422 details naming every problem's location.
 */
import { intKey, isNumberMark, JsonSyntaxError, numberMarkText, parseExact } from './exact-json.js';
import { agentRequestSchema } from './schemas.js';
import type { AgentRequest, ValidationIssue } from './types.js';
import { boundInput, jsonInvalidDetail, zodToDetail } from './validation-errors.js';

export type RequestParse =
  | { ok: true; request: AgentRequest; marked: boolean }
  | { ok: false; detail: ValidationIssue[] };

export interface RequestLimits {
  maxOutputsPerInput: number;
}

/** Locations of numbers that overflow to infinity (`1e400`): the contract requires finite numbers. */
function findNonFinite(v: unknown, loc: (string | number)[], out: ValidationIssue[]): void {
  if (isNumberMark(v)) {
    const text = numberMarkText(v);
    if (!Number.isFinite(Number(text))) {
      out.push({ type: 'finite_number', loc: [...loc], msg: 'Input should be a finite number', input: v });
    }
  } else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) findNonFinite(v[i], [...loc, i], out);
  } else if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) findNonFinite((v as Record<string, unknown>)[k], [...loc, k], out);
  }
}

export function parseAgentRequest(text: string, limits: RequestLimits): RequestParse {
  let parsed;
  try {
    parsed = parseExact(text);
  } catch (err) {
    const e = err as JsonSyntaxError;
    return { ok: false, detail: [jsonInvalidDetail(text, e)] };
  }
  const detail: ValidationIssue[] = [];
  if (parsed.nonFinite) findNonFinite(parsed.value, ['body'], detail);

  const result = agentRequestSchema.safeParse(parsed.value, { reportInput: true });
  if (!result.success) detail.push(...zodToDetail(result.error, parsed.value));
  if (!result.success || detail.length > 0) return { ok: false, detail };

  const request = result.data as AgentRequest;
  const seen = new Map<string, number>();
  request.inputs.forEach((input, i) => {
    const key = intKey(input.id);
    const first = seen.get(key);
    if (first !== undefined) {
      detail.push({
        type: 'value_error',
        loc: ['body', 'inputs', i, 'id'],
        msg: `Value error, duplicate input id ${key} (also inputs[${first}].id); ids must be unique within a request`,
        input: boundInput(input.id),
      });
    } else seen.set(key, i);
    if (typeof input.num_outputs !== 'number' || input.num_outputs > limits.maxOutputsPerInput) {
      detail.push({
        type: 'less_than_equal',
        loc: ['body', 'inputs', i, 'num_outputs'],
        msg: `Input should be less than or equal to ${limits.maxOutputsPerInput} (server.max_outputs_per_input)`,
        input: typeof input.num_outputs === 'number' ? input.num_outputs : numberMarkText(input.num_outputs),
      });
    }
  });
  if (detail.length > 0) return { ok: false, detail };
  return { ok: true, request, marked: parsed.marked };
}
