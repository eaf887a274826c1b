import type { AgentInput } from '../../src/protocol/types.js';

/** A validated AgentInput with the contract's defaults, for pure (no HTTP) tests; override any field. */
export function agentInput(over: Partial<AgentInput> = {}): AgentInput {
  return {
    id: 1,
    instruction: { type: 'user', content: 'hi' },
    tools: [],
    attributes: {},
    memory: {},
    num_outputs: 1,
    extra_keys: {},
    ...over,
  };
}
