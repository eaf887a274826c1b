/**
 * The actor demo agent: calls the first tool in `tools` on the first robot of `attributes.known_robots`, with
 * arguments built from the tool's declared `parameters`; without a tool or a robot it says it has nothing to do.
 * Run: `node dist/demo/agents/actor.js --port 8102` (or PORT=8102).
 */
import type { AgentInput, JsonObject, ToolCall } from '../../src/protocol/types.js';
import { startAgentServer, type AgentServer, type DecideResult } from './agent-server.js';
import { isMain, runAgentProcess } from './cli.js';
import { isJsonObject } from './protocol.js';

export const ACTOR_ID = 'demo-actor';

/** An id-like word of the instruction (`sw0`, `plate_1`): the most plausible value for a string parameter. */
function idLikeToken(text: string): string | undefined {
  return /\b[A-Za-z]+_?\d+\b/.exec(text)?.[0];
}

/**
 * A value for one declared parameter. Types are MAGMA conventions (`str`, `int`, ...), not JSON Schema
 * (docs/protocol-fidelity.md#tool-descriptions-and-private-options); unknown types get a string, the most common
 * kind.
 */
function valueFor(name: string, spec: unknown, instruction: string, first: boolean): unknown {
  const type = isJsonObject(spec) && typeof spec.type === 'string' ? spec.type.toLowerCase() : 'str';
  switch (type) {
    case 'int':
    case 'integer':
      return 1;
    case 'float':
    case 'number':
      return 0.5;
    case 'bool':
    case 'boolean':
      return true;
    case 'list':
    case 'array':
      return [];
    case 'dict':
    case 'object':
      return {};
    default:
      return (first ? idLikeToken(instruction) : undefined) ?? `${name}_0`;
  }
}

export function buildArguments(parameters: unknown, instruction: string): JsonObject {
  const args: JsonObject = {};
  if (!isJsonObject(parameters)) return args;
  Object.keys(parameters).forEach((name, i) => {
    args[name] = valueFor(name, parameters[name], instruction, i === 0);
  });
  return args;
}

export function actorDecide(input: AgentInput): DecideResult {
  const tool = input.tools.find((t) => typeof t.name === 'string' && t.name.length > 0);
  const robots = input.attributes.known_robots;
  const robot = Array.isArray(robots) ? robots.find((r): r is string => typeof r === 'string' && r.length > 0) : undefined;
  if (!tool || !robot) {
    const missing = !tool ? 'no tool' : 'no known robot';
    return { say: `I have nothing to do: ${missing} is available.`, tool_calls: [] };
  }
  const call: ToolCall = {
    name: tool.name as string,
    arguments: buildArguments(tool.parameters, input.instruction.content),
    target_robot_name: robot,
  };
  return { say: '', tool_calls: [call] };
}

export function startActor(o: { port?: number; host?: string } = {}): Promise<AgentServer> {
  return startAgentServer({ ...o, info: { agent_id: ACTOR_ID, agent_version: '0.1.0' }, decide: actorDecide });
}

if (isMain(import.meta.url)) void runAgentProcess('actor', startActor);
