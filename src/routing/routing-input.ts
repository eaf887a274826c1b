/**
 * What routing reads of an input: one memory member at a time, so an input read by the indexer decodes only the
 * member asked for; a decoded input (a coaching step, a planning test) is wrapped by decodedInput.
 */
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

class DecodedInput implements RoutingInput {
  constructor(private readonly input: AgentInput) {}

  get id(): AgentInput['id'] {
    return this.input.id;
  }

  get instruction(): AgentInput['instruction'] {
    return this.input.instruction;
  }

  get tools(): readonly JsonObject[] {
    return this.input.tools;
  }

  get attributes(): JsonObject {
    return this.input.attributes;
  }

  get extra_keys(): JsonObject {
    return this.input.extra_keys;
  }

  get num_outputs(): number {
    return this.input.num_outputs;
  }

  memoryMember(key: string): unknown {
    // Own members only, so `constructor` or `__proto__` never resolve to prototype members.
    const memory = this.input.memory;
    return Object.hasOwn(memory, key) ? memory[key] : undefined;
  }
}

export function decodedInput(input: AgentInput): RoutingInput {
  return new DecodedInput(input);
}
