/**
 * What routing reads of an input: one member of its memory, attributes or extra_keys at a time, so an indexed input
 * decodes only the one asked for (a 60 MB `attributes` is scanned for its member, never parsed whole on the loop).
 */
import type { AgentInput, JsonObject, MemberOf } from '../protocol/types.js';

export interface RoutingInput {
  readonly id: AgentInput['id'];
  readonly instruction: AgentInput['instruction'];
  readonly tools: readonly JsonObject[];
  readonly num_outputs: number;
  member(of: MemberOf, key: string): unknown;
}

export interface RoutingRequest {
  readonly request_id: string;
  readonly inputs: readonly RoutingInput[];
}

export function decodedInput(input: AgentInput): RoutingInput {
  const { id, instruction, tools, num_outputs } = input;
  // Own members only, so `constructor` or `__proto__` never resolve to prototype members.
  const member = (of: MemberOf, key: string): unknown => (Object.hasOwn(input[of], key) ? input[of][key] : undefined);
  return { id, instruction, tools, num_outputs, member };
}
