/**
 * How the bench's backend agent answers an AgentRequest, as a pure function (shared by the backend process and
 * the JSON micro-bench, which needs the same response bytes). Built by string concatenation from templates.
 */
import { fillerText } from './bodies.js';

export interface ResponderOptions {
  /** Size of the history step appended to history-shaped memory, KB. */
  stepKb: number;
  /** Size of the internal_steps record of a history-shaped input's candidate, KB. */
  internalKb: number;
}

export type Answer = { body: string; inputs: number; candidates: number } | { error: string };

interface Input {
  id: unknown;
  memory?: unknown;
  num_outputs?: unknown;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const OUTPUT_TOOL =
  ',"output":{"say":"","tool_calls":[{"name":"pick","arguments":{"object":"plate_1"},"target_robot_name":"dish_robot"}]},"error":null}';
const OUTPUT_SAY = ',"output":{"say":"Hello from the bench agent.","tool_calls":[]},"error":null}';

/**
 * A responder: one candidate per requested (input, candidate) with source_id = the input's id.
 * - memory with a `history` list (S2): memory grown by one agent step, one internal_steps record, a tool call.
 * - otherwise: memory echoed, internal_steps [], a short `say`.
 */
export function makeResponder(opts: ResponderOptions): (text: string) => Answer {
  const step = {
    author: 'agent',
    content: JSON.stringify({
      say: '',
      tool_calls: [{ name: 'pick', arguments: { object: 'plate_1' }, target_robot_name: 'dish_robot' }],
      reasoning: fillerText(7, Math.max(0, opts.stepKb * 1024 - 160)),
    }),
  };
  const internalBig = JSON.stringify([
    {
      component: 'planner',
      prompt: fillerText(8, Math.max(0, Math.round(opts.internalKb * 1024 * 0.75) - 40)),
      raw_output: fillerText(9, Math.max(0, Math.round(opts.internalKb * 1024 * 0.25) - 40)),
    },
  ]);

  return (text: string): Answer => {
    let req: unknown;
    try {
      req = JSON.parse(text);
    } catch (err) {
      return { error: `invalid JSON: ${err instanceof Error ? err.message : String(err)}` };
    }
    if (!isObject(req) || typeof req.request_id !== 'string' || !Array.isArray(req.inputs)) {
      return { error: 'not an AgentRequest' };
    }
    const head = '{"request_id":' + JSON.stringify(req.request_id) + ',"source_id":';
    let body = '[';
    let candidates = 0;
    const inputs = req.inputs as Input[];
    for (let i = 0; i < inputs.length; i++) {
      const input = inputs[i]!;
      if (!isObject(input) || typeof input.id !== 'number') return { error: `inputs[${i}] has no integer id` };
      const n = input.num_outputs === undefined ? 1 : input.num_outputs;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) return { error: `inputs[${i}].num_outputs` };
      const memory = isObject(input.memory) ? input.memory : {};
      let mem: string;
      let tail: string;
      if (Array.isArray(memory.history)) {
        mem = JSON.stringify({ ...memory, history: [...(memory.history as unknown[]), step] });
        tail = ',"internal_steps":' + internalBig + OUTPUT_TOOL;
      } else {
        mem = JSON.stringify(memory);
        tail = ',"internal_steps":[]' + OUTPUT_SAY;
      }
      const pre = head + String(input.id) + ',"candidate_index":';
      const mid = ',"status":"completed","memory":' + mem + tail;
      for (let k = 0; k < n; k++) {
        if (candidates > 0) body += ',';
        body += pre + k + mid;
        candidates++;
      }
    }
    return { body: body + ']', inputs: inputs.length, candidates };
  };
}
