/** A `POST /v1/responses` body decoded and validated; the source of every 422 detail's words. */
import { intKey, isNumberMark, JsonDepthError, JsonSyntaxError, numberMarkText, overflows, parseExact } from './json/exact-json.js';
import { DEFAULT_MAX_JSON_DEPTH } from './json/json-depth.js';
import { agentRequestSchema } from './schemas.js';
import type { AgentRequest, IntValue, ValidationIssue } from './types.js';
import { boundInput, jsonInvalidDetail, zodToDetail } from './validation-errors.js';

type RequestParse =
  | { ok: true; request: AgentRequest }
  | { ok: false; detail: ValidationIssue[] };

interface RequestLimits {
  maxOutputsPerInput: number;
  maxJsonDepth?: number;
}

/** Recursive, safe because parseExact refused anything deeper than server.max_json_depth. */
export function findNonFinite(v: unknown, loc: (string | number)[], out: ValidationIssue[]): void {
  if (isNumberMark(v)) {
    if (overflows(numberMarkText(v))) {
      out.push({ type: 'finite_number', loc: [...loc], msg: 'Input should be a finite number', input: v });
    }
  } else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) findNonFinite(v[i], [...loc, i], out);
  } else if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) findNonFinite(Reflect.get(v, k), [...loc, k], out);
  }
}

export function parseAgentRequest(text: string, limits: RequestLimits): RequestParse {
  let parsed;
  try {
    parsed = parseExact(text, { maxDepth: limits.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH });
  } catch (err) {
    if (err instanceof JsonDepthError) {
      return { ok: false, detail: [{ type: 'json_invalid', loc: ['body'], msg: err.message, input: {} }] };
    }
    if (!(err instanceof JsonSyntaxError)) throw err; // parseExact throws no other error
    return { ok: false, detail: [jsonInvalidDetail(text, err)] };
  }
  const result = agentRequestSchema.safeParse(parsed.value, { reportInput: true });
  const detail: ValidationIssue[] = result.success ? [] : zodToDetail(result.error, parsed.value);
  if (parsed.nonFinite) {
    // 1e400 where a string belongs is already string_type there: one problem per location, as pydantic says.
    const seen = new Set(detail.map((d) => JSON.stringify(d.loc)));
    const infinite: ValidationIssue[] = [];
    findNonFinite(parsed.value, ['body'], infinite);
    detail.unshift(...infinite.filter((d) => !seen.has(JSON.stringify(d.loc))));
  }
  if (!result.success || detail.length > 0) return { ok: false, detail };

  const request = result.data as AgentRequest; // AgentInput narrows num_outputs to number: the loop below refuses any other before the request is returned
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
      detail.push(tooManyOutputs(['body', 'inputs', i], input.num_outputs, limits.maxOutputsPerInput));
    }
  });
  if (detail.length > 0) return { ok: false, detail };
  return { ok: true, request };
}

/** num_outputs over server.max_outputs_per_input at the input `loc`. */
export function tooManyOutputs(loc: (string | number)[], n: IntValue, max: number): ValidationIssue {
  return {
    type: 'less_than_equal',
    loc: [...loc, 'num_outputs'],
    msg: `Input should be less than or equal to ${max} (server.max_outputs_per_input)`,
    input: typeof n === 'number' ? n : numberMarkText(n),
  };
}

/** The indexer refused a body parseAgentRequest accepts (the differential test keeps this unreached). */
export function readersDisagree(reject: { reason: string; at: number }): ValidationIssue {
  return { type: 'value_error', loc: ['body'], msg: `Value error, ${reject.reason} (byte ${reject.at})`, input: {} };
}
