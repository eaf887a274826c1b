/** What routing reads of an input: one memory member at a time, so an indexed input decodes only the one asked for. */
import type { AgentInput, JsonObject } from '../protocol/types.js';

export interface RoutingInput {
  readonly id: AgentInput['id'];
  readonly instruction: AgentInput['instruction'];
  readonly tools: readonly JsonObject[];
  readonly attributes: JsonObject;
  readonly extra_keys: JsonObject;
  readonly num_outputs: number;
  memoryMember(key: string): unknown;
}

export interface RoutingRequest {
  readonly request_id: string;
  readonly inputs: readonly RoutingInput[];
}

export function decodedInput(input: AgentInput): RoutingInput {
  const { id, instruction, tools, attributes, extra_keys, num_outputs, memory } = input;
  // Own members only, so `constructor` or `__proto__` never resolve to prototype members.
  const memoryMember = (key: string): unknown => (Object.hasOwn(memory, key) ? memory[key] : undefined);
  return { id, instruction, tools, attributes, extra_keys, num_outputs, memoryMember };
}
