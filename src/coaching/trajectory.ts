/** A coaching request read just enough to route it: lenient, never a rejection the backend would not make. */
import { intKey, isNumberMark, isStrictInt, numberMarkText } from '../protocol/json/exact-json.js';
import type { AgentInput, JsonObject, ValidationIssue } from '../protocol/types.js';
import type { Headers } from '../routing/match.js';
import { newTrajectoryBackend, readMemoryTag, type MemoryTag } from '../routing/plan.js';
import { selectRoute, type CompiledRoutes } from '../routing/routes.js';
import { decodedInput } from '../routing/routing-input.js';
import { isJsonObject } from '../protocol/schemas.js';
import { GatewayError } from '../errors.js';

interface CoachingTarget {
  stepIndex: number;
  input: AgentInput;
  /** On its input's memory, else on its output's. */
  tag: MemoryTag | undefined;
}

/** A step or target id as comparable text: `3`, `"3"` and a big-integer marker for 3 are the same id. */
function idText(v: unknown): string | undefined {
  if (typeof v === 'string') return isNumberMark(v) ? intKey(v) : v;
  if (typeof v === 'number') return Number.isInteger(v) ? intKey(v) : String(v);
  return undefined;
}

/** The step whose `step_id` (or `id`) is `target_step_id`, else the step at that index, else the last. */
export function findTarget(body: JsonObject, memoryKey: string): CoachingTarget | ValidationIssue {
  const steps: unknown[] = Array.isArray(body.trajectory) ? body.trajectory : [];
  const usable: { index: number; step: JsonObject; input: JsonObject }[] = [];
  steps.forEach((step, index) => {
    if (isJsonObject(step) && isJsonObject(step.input)) usable.push({ index, step, input: step.input });
  });
  const last = usable.at(-1);
  if (last === undefined) {
    return {
      type: 'value_error',
      loc: ['body', 'trajectory'],
      msg: 'the gateway needs at least one trajectory step with an input to route a coaching request',
      input: body.trajectory ?? null,
    };
  }
  const target = idText(body.target_step_id);
  const chosen =
    (target === undefined ? undefined : usable.find((u) => idText(u.step.step_id ?? u.step.id) === target)) ??
    (target !== undefined && /^\d+$/.test(target) ? usable.find((u) => u.index === Number(target)) : undefined) ??
    last;
  const { index, step, input: rawInput } = chosen;
  const output = step.output;
  const tag =
    (isJsonObject(rawInput.memory) ? readMemoryTag(rawInput.memory, memoryKey) : undefined) ??
    (isJsonObject(output) && isJsonObject(output.memory) ? readMemoryTag(output.memory, memoryKey) : undefined);
  return { stepIndex: index, input: normalizeInput(rawInput), tag };
}

function normalizeInput(raw: JsonObject): AgentInput {
  const ins = isJsonObject(raw.instruction) ? raw.instruction : {};
  return {
    id: isStrictInt(raw.id) ? raw.id : 0,
    instruction: { type: ins.type === 'env' ? 'env' : 'user', content: typeof ins.content === 'string' ? ins.content : '' },
    tools: Array.isArray(raw.tools) ? raw.tools.filter(isJsonObject) : [],
    attributes: isJsonObject(raw.attributes) ? raw.attributes : {},
    memory: isJsonObject(raw.memory) ? raw.memory : {},
    num_outputs: 1,
    extra_keys: isJsonObject(raw.extra_keys) ? raw.extra_keys : {},
  };
}

/** For an ensemble, whose members may not all coach, its first member that does, else its first. */
export function ruleBackend(
  compiled: CompiledRoutes,
  input: AgentInput,
  requestId: string,
  headers: Headers,
  canServe: (backend: string) => boolean,
  coaches: (backend: string) => boolean,
): { backend: string; route: string } {
  const routed = decodedInput(input);
  const route = selectRoute(compiled, routed, headers);
  const backend =
    newTrajectoryBackend(route, requestId, routed, canServe) ??
    route.members.find((m) => coaches(m.name))?.name ??
    route.members[0]?.name;
  if (backend === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', `route ${route.name} has no member`);
  return { backend, route: route.name };
}

export function runIdOf(body: JsonObject): string | undefined {
  const v = body.run_id;
  if (typeof v === 'string') return isNumberMark(v) ? numberMarkText(v) : v;
  if (typeof v === 'number') return String(v);
  return undefined;
}
