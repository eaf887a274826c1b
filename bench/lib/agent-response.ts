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
  /**
   * Answers estimated above this many characters come as Buffers instead of one string: a V8 string holds at
   * most about 512 MiB, and 1 input x 600 KB memory x 1024 candidates answers more. Default: always a string.
   */
  maxStringChars?: number;
}

/** A big answer as a list of Buffers: each input's memory part is one Buffer shared by all its candidates. */
export interface Chunked {
  chunks: Buffer[];
  /** Sum of the chunks' lengths (the content-length). */
  bytes: number;
}

export type Answer = (({ body: string } | Chunked) & { inputs: number; candidates: number }) | { error: string };

/** The answer's text, per input: each candidate is `pre` + its candidate_index + `mid`. */
interface Part {
  pre: string;
  mid: string;
  n: number;
}

function joined(parts: readonly Part[]): string {
  let body = '[';
  let first = true;
  for (const { pre, mid, n } of parts) {
    for (let k = 0; k < n; k++) {
      if (!first) body += ',';
      body += pre + k + mid;
      first = false;
    }
  }
  return body + ']';
}

function chunked(parts: readonly Part[]): Chunked {
  const chunks: Buffer[] = [Buffer.from('[')];
  let first = true;
  for (const { pre, mid, n } of parts) {
    const midBuf = Buffer.from(mid);
    for (let k = 0; k < n; k++) {
      chunks.push(Buffer.from((first ? '' : ',') + pre + k), midBuf);
      first = false;
    }
  }
  chunks.push(Buffer.from(']'));
  let bytes = 0;
  for (const c of chunks) bytes += c.length;
  return { chunks, bytes };
}

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
 * The answer is one string, or Buffers when it would be longer than `maxStringChars`.
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
    const parts: Part[] = [];
    let candidates = 0;
    let chars = 2;
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
      const part = { pre: head + String(input.id) + ',"candidate_index":', mid: ',"status":"completed","memory":' + mem + tail, n };
      parts.push(part);
      candidates += n;
      chars += n * (part.pre.length + part.mid.length + 6);
    }
    const counts = { inputs: inputs.length, candidates };
    return chars <= (opts.maxStringChars ?? Infinity) ? { body: joined(parts), ...counts } : { ...chunked(parts), ...counts };
  };
}
