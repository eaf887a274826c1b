/**
 * The contract's objects as the gateway holds them after parseExact + validation (docs/protocol-fidelity.md#inference-input and docs/protocol-fidelity.md#response-fields-and-ordering):
 * each is inferred from its zod schema (schemas.ts), so
 * there is one declaration of every field. Only what has no schema is declared here.
 */
import type { z } from 'zod';
import type { IntValue, JsonObject } from './json/json-values.js';
import type {
  agentDecisionSchema,
  agentErrorSchema,
  agentInfoSchema,
  agentInputSchema,
  agentOutputSchema,
  toolCallSchema,
} from './schemas.js';

export type { IntValue, JsonObject };

/**
 * An input of a validated request. The schema lets num_outputs be a number marker (a huge integer);
 * parseAgentRequest then refuses any num_outputs over server.max_outputs_per_input, so a validated input's
 * is always a JS number.
 */
export type AgentInput = Omit<z.output<typeof agentInputSchema>, 'num_outputs'> & {
  num_outputs: number;
};
export interface AgentRequest {
  request_id: string;
  inputs: AgentInput[];
}
export type ToolCall = z.output<typeof toolCallSchema>;
export type AgentDecision = z.output<typeof agentDecisionSchema>;
export type AgentError = z.output<typeof agentErrorSchema>;
export type AgentOutput = z.output<typeof agentOutputSchema>;
export type AgentInfo = z.output<typeof agentInfoSchema>;

/** FastAPI's validation error item: `{"detail": [{type, loc, msg, input}]}`. */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  /** pydantic's error context (`{"min_length": 1}`, `{"error": "Expecting value"}`), when it has one. */
  ctx?: Record<string, unknown>;
}
