/**
 * What routing reads of an input: the protocol fields, the free-form values a match key walks into, and one
 * memory member at a time (a `memory.<path>` key, the memory tag). An input read by the indexer
 * (protocol/request/indexed-request.ts) is one as it is and decodes only the member asked for; a decoded input (a
 * coaching trajectory's step, a pure planning test) is wrapped by decodedInput.
 */
import type { AgentInput, JsonObject } from '../protocol/types.js';

export interface RoutingInput {
  readonly id: AgentInput['id'];
  readonly instruction: AgentInput['instruction'];
  readonly tools: readonly JsonObject[];
  readonly attributes: JsonObject;
  readonly extra_keys: JsonObject;
  readonly num_outputs: number;
  /** The decoded value of memory's top-level member `key`, or undefined when memory has none. */
  memoryMember(key: string): unknown;
}

/** A request as routing reads it. */
export interface RoutingRequest {
  readonly request_id: string;
  readonly inputs: readonly RoutingInput[];
}

/** A decoded input as routing reads it: its memory is already an object. */
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
