/**
 * Request bodies of the bench scenarios, generated deterministically (seeded) so every run sends the same bytes.
 * Shapes follow (docs/protocol-fidelity.md#payload-sizes and docs/protocol-fidelity.md#environment-feedback): full-history memory (`history` of
 * `{author, content}` + `memory_list`),
 * env instructions holding Python-`json.dumps`-style JSON strings, tool descriptions, `known_robots`.
 */
import { seededRandom } from './seeded-random.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface BenchInput {
  id: number;
  instruction: { type: 'user' | 'env'; content: string };
  tools: Json[];
  attributes: { [key: string]: Json };
  memory: { [key: string]: Json };
  num_outputs: number;
  extra_keys: { [key: string]: Json };
}

export interface BenchRequest {
  request_id: string;
  inputs: BenchInput[];
}

/** autocannon replaces this with a unique id per request (`idReplacement`): every batch is a new request_id. */
export const ID_PLACEHOLDER = '[<id>]';

const WORDS = (
  'the robot plate cup table sink shelf drawer kitchen pick place open close wash dry move left right ' +
  'grasp release check status task step order first then after before carefully quickly holding empty ' +
  'dish_robot table_robot panda arm gripper object target location counter cabinet fridge door handle ' +
  'succeed failed message because cannot reach blocked retry plan next goal done stack bowl fork knife'
).split(' ');

function text(r: () => number, chars: number): string {
  let s = '';
  while (s.length < chars) {
    const w = WORDS[Math.floor(r() * WORDS.length)]!;
    const p = r();
    s += p < 0.04 ? `"${w}" ` : p < 0.07 ? `${w}.\n` : p < 0.1 ? `${w}, ` : `${w} `;
  }
  return s.slice(0, chars);
}

/** A Python `json.dumps`-style env payload (", " and ": " separators), as BENCH's executors send it. */
function envPayload(r: () => number, chars: number): string {
  const robot = r() < 0.5 ? 'dish_robot' : 'table_robot';
  return (
    `{"infos": "${robot}: pick succeed with message: ${text(r, chars).replace(/["\n\\]/g, ' ')}", ` +
    `"previous_tool_call": {"${robot}": {"name": "pick", "arguments": {"object": "plate_${Math.floor(r() * 9)}"}}}}`
  );
}

const TOOLS: Json[] = [
  { name: 'pick', description: 'Pick an object.', parameters: { object: { description: 'Object name.', type: 'str' } } },
  {
    name: 'place',
    description: 'Place the held object somewhere.',
    parameters: { location: { description: 'Where to put it.', type: 'str' } },
  },
  { name: 'open', description: 'Open a door or drawer.', parameters: { target: { description: 'What to open.', type: 'str' } } },
  { name: 'close', description: 'Close a door or drawer.', parameters: { target: { description: 'What to close.', type: 'str' } } },
  { name: 'wash', description: 'Wash the held object.', parameters: {} },
  { name: 'wait', description: 'Do nothing for one step.', parameters: {} },
];

const ATTRIBUTES = { scenario: 'kitchen-3', known_robots: ['dish_robot', 'table_robot'] };

/** S1: one input, about 1 KB of JSON. */
export function smallRequest(requestId: string, numOutputs = 1, inputs = 1): BenchRequest {
  const r = seededRandom(1);
  const list: BenchInput[] = [];
  for (let i = 0; i < inputs; i++) {
    list.push({
      id: i,
      instruction: { type: 'user', content: text(r, 220) },
      tools: TOOLS.slice(0, 2),
      attributes: ATTRIBUTES,
      memory: { memory_list: [text(r, 90), text(r, 90)] },
      num_outputs: numOutputs,
      extra_keys: { inference_mode: true },
    });
  }
  return { request_id: requestId, inputs: list };
}

/** A full-history memory of about `bytes` bytes of JSON: alternating user/agent/env steps of ~2 KB. */
export function historyMemory(seed: number, bytes: number): { [key: string]: Json } {
  const r = seededRandom(seed);
  const history: Json[] = [];
  const memory: { [key: string]: Json } = {
    history,
    memory_list: [text(r, 120), text(r, 120), text(r, 120)],
  };
  let size = JSON.stringify(memory).length;
  let step = 0;
  while (size < bytes) {
    const kind = step === 0 ? 'user' : step % 2 === 1 ? 'agent' : 'env';
    const want = Math.min(2048, bytes - size);
    let content: string;
    if (kind === 'env') content = envPayload(r, Math.max(20, want - 160));
    else if (kind === 'agent') {
      content = JSON.stringify({
        say: '',
        tool_calls: [{ name: 'pick', arguments: { object: `plate_${step}` }, target_robot_name: 'dish_robot' }],
        reasoning: text(r, Math.max(20, want - 160)),
      });
    } else content = text(r, Math.max(20, want - 40));
    const entry = { author: kind, content };
    history.push(entry);
    size += JSON.stringify(entry).length + 1;
    step++;
  }
  return memory;
}

/** S2: `inputs` env inputs, each with ~`memoryKb` KB of history-shaped memory (BENCH mid-episode). */
export function historyRequest(requestId: string, inputs = 32, memoryKb = 64, numOutputs = 1): BenchRequest {
  const list: BenchInput[] = [];
  for (let i = 0; i < inputs; i++) {
    const r = seededRandom(1000 + i);
    list.push({
      id: i,
      instruction: { type: 'env', content: envPayload(r, 200) },
      tools: TOOLS,
      attributes: ATTRIBUTES,
      memory: historyMemory(2000 + i, memoryKb * 1024),
      num_outputs: numOutputs,
      extra_keys: { inference_mode: true },
    });
  }
  return { request_id: requestId, inputs: list };
}

/** The body text with the placeholder request id, ready for the load generator. */
export function bodyText(req: BenchRequest): string {
  return JSON.stringify(req);
}

/** Deterministic filler text of `chars` characters (the backend's internal_steps records). */
export function fillerText(seed: number, chars: number): string {
  return text(seededRandom(seed), chars);
}
