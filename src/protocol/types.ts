/** The contract's objects inferred from their zod schemas, so every field is declared once. */
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

/** parseAgentRequest refuses a num_outputs marker (a huge integer) the schema lets through. */
export type AgentInput = Omit<z.output<typeof agentInputSchema>, 'num_outputs'> & {
  num_outputs: number;
};
/** The free-form objects of an input whose members routing reads one at a time. */
export type MemberOf = 'memory' | 'attributes' | 'extra_keys';

export interface AgentRequest {
  request_id: string;
  inputs: AgentInput[];
}
export type ToolCall = z.output<typeof toolCallSchema>;
export type AgentDecision = z.output<typeof agentDecisionSchema>;
export type AgentError = z.output<typeof agentErrorSchema>;
export type AgentOutput = z.output<typeof agentOutputSchema>;
export type AgentInfo = z.output<typeof agentInfoSchema>;

/** FastAPI's validation error item. */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}
