/** The MAGMA Agent HTTP contract v2.0, as strict as its pydantic models in strict mode. */
import { z } from 'zod';
import { isNumberMark, isStrictInt } from './json/exact-json.js';
import type { IntValue, JsonObject } from './json/json-values.js';

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Undefined when the text is not JSON: JSON.parse itself never returns undefined. */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A check's pydantic error: its message, and its `type` as validation-errors.ts reads it back. */
const pydantic = (error: string, type: string) => ({ error, params: { type } });

/** A number marker is a JS string standing for a number, refused as pydantic refuses it: never use z.string(). */
const jsonString = z.custom<string>((v) => typeof v === 'string' && !isNumberMark(v), pydantic('Input should be a valid string', 'string_type'));
const nonEmptyString = jsonString.refine((v) => v.length > 0, pydantic('String should have at least 1 character', 'string_too_short'));
const strictInt = z.custom<IntValue>(isStrictInt, pydantic('Input should be a valid integer', 'int_type'));
const strictBool = z.custom<boolean>((v) => typeof v === 'boolean', pydantic('Input should be a valid boolean', 'bool_type'));
const jsonObject = z.custom<JsonObject>(isJsonObject, pydantic('Input should be a valid dictionary', 'dict_type'));
const list = <T extends z.ZodType>(item: T) =>
  z.array(item, { error: 'Input should be a valid list' });

/** What the gateway serves (contract "Health and identity"). */
export const agentInfoSchema = z.strictObject({
  protocol_version: jsonString.default('2.0'),
  agent_id: jsonString,
  agent_version: jsonString,
  capabilities: z.record(z.string(), strictBool),
  specialized_coaching: list(jsonString).default([]),
  coaching_resume: strictBool.default(false),
  coaching_unavailable_reason: jsonString.nullable().default(null),
});

/**
 * Lenient (docs/protocol-fidelity.md#health-and-identity): unknown fields are dropped, not kept, since the admin
 * API shows this with plain JSON, where a number marker would leak as a string.
 */
export const backendInfoSchema = z.object(agentInfoSchema.shape);

const agentInstructionSchema = z.strictObject({
  type: z.enum(['user', 'env'], { error: "Input should be 'user' or 'env'" }),
  content: jsonString,
});

export const agentInputSchema = z.strictObject({
  id: strictInt,
  instruction: agentInstructionSchema,
  tools: list(jsonObject).default([]),
  attributes: jsonObject.default({}),
  memory: jsonObject.default({}),
  num_outputs: strictInt
    .refine((v) => (typeof v === 'number' && v > 0 ? true : typeof v === 'string' && !v.includes('-')), pydantic('Input should be greater than 0', 'greater_than'))
    .default(1),
  extra_keys: jsonObject.default({}),
});

export const agentRequestSchema = z.strictObject({
  request_id: nonEmptyString,
  inputs: list(agentInputSchema),
});

export const toolCallSchema = z.strictObject({
  name: nonEmptyString,
  arguments: jsonObject.default({}),
  target_robot_name: nonEmptyString,
});

export const agentDecisionSchema = z.strictObject({
  say: jsonString.default(''),
  tool_calls: list(toolCallSchema).default([]),
});

export const agentErrorSchema = z.strictObject({
  code: nonEmptyString,
  message: nonEmptyString,
  component: jsonString.nullable().default(null),
});

const nonNegativeInt = strictInt.refine((v) => (typeof v === 'number' ? v >= 0 : !v.includes('-')), pydantic('Input should be greater than or equal to 0', 'greater_than_equal'));

export const agentOutputSchema = z
  .strictObject({
    request_id: nonEmptyString,
    source_id: strictInt,
    candidate_index: nonNegativeInt,
    status: z.enum(['completed', 'error'], { error: "Input should be 'completed' or 'error'" }),
    memory: jsonObject,
    internal_steps: list(jsonObject).default([]),
    output: agentDecisionSchema.nullable().default(null),
    error: agentErrorSchema.nullable().default(null),
  })
  .superRefine((o, ctx) => {
    // Contract "Response fields and ordering": completed needs a decision and no error; error the reverse.
    const [own, other] = o.status === 'completed' ? (['output', 'error'] as const) : (['error', 'output'] as const);
    if (o[own] === null || o[other] !== null) {
      ctx.addIssue({
        code: 'custom',
        message: o.status === 'completed'
          ? 'a completed candidate requires a non-null output and no error'
          : 'an error candidate requires a non-null error and no output',
        params: { type: 'value_error' },
        path: [o[own] === null ? own : other],
      });
    }
  });

