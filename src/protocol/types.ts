/**
 * The contract's objects as the gateway holds them after parseExact + validation
 * (docs/agent-contract.md, "Inference input", "Response fields and ordering").
 *
 * Integers of any size arrive either as JS numbers or as number markers (see exact-json.ts): `IntValue`.
 * Free-form objects (tools, attributes, memory, extra_keys, internal_steps) are kept by reference, unchanged.
 */
export type JsonObject = { [key: string]: unknown };
/** A strict integer: a JS number, or a number marker string for integers JS cannot hold exactly. */
export type IntValue = number | string;

export interface AgentInstruction {
  type: 'user' | 'env';
  content: string;
}

export interface AgentInput {
  id: IntValue;
  instruction: AgentInstruction;
  tools: JsonObject[];
  attributes: JsonObject;
  memory: JsonObject;
  num_outputs: number;
  extra_keys: JsonObject;
}

export interface AgentRequest {
  request_id: string;
  inputs: AgentInput[];
}

export interface ToolCall {
  name: string;
  arguments: JsonObject;
  target_robot_name: string;
}

export interface AgentDecision {
  say: string;
  tool_calls: ToolCall[];
}

export interface AgentError {
  code: string;
  message: string;
  component: string | null;
}

export interface AgentOutput {
  request_id: string;
  source_id: IntValue;
  candidate_index: IntValue;
  status: 'completed' | 'error';
  memory: JsonObject;
  internal_steps: JsonObject[];
  output?: AgentDecision | null;
  error?: AgentError | null;
}

export type AgentResponse = AgentOutput[];

export interface AgentHealth {
  status: 'ready';
}

export interface AgentInfo {
  protocol_version: string;
  agent_id: string;
  agent_version: string;
  capabilities: Record<string, boolean>;
  specialized_coaching: string[];
  coaching_resume: boolean;
  coaching_unavailable_reason: string | null;
}

/** FastAPI's validation error item: `{"detail": [{type, loc, msg, input}]}`. */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  /** pydantic's error context (`{"min_length": 1}`, `{"error": "Expecting value"}`), when it has one. */
  ctx?: Record<string, unknown>;
}
