/**
 * Every agent of a config compiled (src/routing/agents.ts, docs/routing.md#virtual-agents), and batches planned per
 * agent: each agent plans with its own route table and memory key. Pure: a config, a request and a snapshot
 * in, a plan out; no HTTP.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfigText } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { compileAgents, findAgent, routesLacking } from '../../src/routing/agents.js';
import { planBatch, type RoutingSnapshot } from '../../src/routing/plan.js';
import { agentInput } from '../helpers/inputs.js';
import { decodedInput } from '../../src/routing/routing-input.js';

const CONFIG = parseConfigText(
  [
    'backends:',
    '  qwen: { url: http://127.0.0.1:8001 }',
    '  gpt: { url: http://127.0.0.1:8002 }',
    '  llama: { url: http://127.0.0.1:8003 }',
    'routes:',
    '  - { name: ab, backend: qwen }',
    'agents:',
    '  kitchen:',
    '    agent: { agent_id: kitchen-ab }',
    '    memory_key: _k',
    '    routes:',
    '      - { name: feedback, match: { instruction_type: env }, backend: llama }',
    '      - { name: ab, backend: gpt, fallback: [llama] }',
    '  lab:',
    '    routes: [{ name: ab, split: { qwen: 1, llama: 1 } }]',
  ].join('\n'),
  'agents-test.yaml',
  {},
);
const AGENTS = compileAgents(CONFIG);
const ALL: RoutingSnapshot = { canServe: () => true };

function plan(agent: string | undefined, inputs = [agentInput()]): ReturnType<typeof planBatch> {
  const a = findAgent(AGENTS, agent);
  assert.ok(a, `agent ${String(agent)}`);
  return planBatch({ request_id: 'r', inputs: inputs.map(decodedInput) }, a.routes, ALL, { headers: {} });
}

test('every agent is compiled: the default agent first, then the virtual ones in file order', () => {
  assert.deepEqual(
    AGENTS.all.map((a) => [a.name, a.virtual, a.prefix, a.agentId, a.routes.agent, a.routes.memoryKey, a.reachable]),
    [
      ['default', false, '', 'magma-gateway', 'default', '_gateway', ['qwen']],
      ['kitchen', true, '/agents/kitchen', 'kitchen-ab', 'kitchen', '_k', ['llama', 'gpt']],
      ['lab', true, '/agents/lab', 'lab', 'lab', '_gateway', ['qwen', 'llama']],
    ],
  );
  assert.equal(AGENTS.root?.name, 'default');
});

test('the same input is planned by the route table of the agent it was sent to', () => {
  assert.deepEqual(plan(undefined).inputs.map((p) => [p.route, p.legs.map((l) => l.backend)]), [['ab', ['qwen']]]);
  assert.deepEqual(plan('kitchen').inputs.map((p) => [p.route, p.legs.map((l) => l.backend), p.legs[0]!.fallbacks]), [['ab', ['gpt'], ['llama']]]);
  const env = agentInput({ instruction: { type: 'env', content: '{}' } });
  assert.deepEqual(plan('kitchen', [env]).inputs.map((p) => p.route), ['feedback']);
  assert.deepEqual(plan(undefined, [env]).inputs.map((p) => p.route), ['ab'], 'the default agent has no feedback route');
  const lab = plan('lab').inputs[0]!;
  assert.equal(lab.route, 'ab');
  assert.ok(lab.arm === 'qwen' || lab.arm === 'llama', String(lab.arm));
});

test('stickiness reads the agent\'s own memory key', () => {
  const memory = { _k: { backend: 'llama', route: 'ab' }, _gateway: { backend: 'qwen', route: 'ab' } };
  const kitchen = plan('kitchen', [agentInput({ memory })]).inputs[0]!;
  assert.deepEqual([kitchen.continued, kitchen.legs[0]!.backend, kitchen.tag], [true, 'llama', { backend: 'llama', route: 'ab' }]);
  const root = plan(undefined, [agentInput({ memory })]).inputs[0]!;
  assert.deepEqual([root.continued, root.legs[0]!.backend], [true, 'qwen']);
});

test('an unknown name, or one of an object\'s own keys, finds no agent', () => {
  for (const name of ['nope', 'default', '__proto__', 'constructor', 'toString', '']) assert.equal(findAgent(AGENTS, name), undefined, name);
  assert.equal(findAgent(AGENTS, 'lab')?.name, 'lab');
});

test('a config with only virtual agents has no default agent', () => {
  const only: GatewayConfig = parseConfigText(
    ['backends: { q: { url: "http://127.0.0.1:1" } }', 'agents: { solo: { routes: [{ name: m, backend: q }] } }'].join('\n'),
    'only.yaml',
    {},
  );
  const agents = compileAgents(only);
  assert.equal(agents.root, undefined);
  assert.equal(findAgent(agents, undefined), undefined);
  assert.deepEqual(agents.all.map((a) => a.name), ['solo']);
});

test('an agent lacks a route when none of its backends can serve, whatever other agents have', () => {
  const ready = (b: string): boolean => b !== 'gpt' && b !== 'llama';
  assert.deepEqual(routesLacking(findAgent(AGENTS, 'kitchen')!, ready), ['feedback', 'ab']);
  assert.deepEqual(routesLacking(findAgent(AGENTS, 'lab')!, ready), []);
  assert.deepEqual(routesLacking(findAgent(AGENTS, undefined)!, ready), []);
});

test('compileAgents refuses a config built in code whose default agent has no catch-all route', () => {
  const bad = { ...CONFIG, routes: [{ ...CONFIG.routes[0]!, match: { instruction_type: 'env' } }] } as GatewayConfig;
  assert.throws(() => compileAgents(bad), /no catch-all route/);
});

test('compileAgents refuses a config built in code whose agent breaks the route invariants', () => {
  const bad = { ...CONFIG, agents: { x: { agent: { agent_id: 'x' }, routes: [{ ...CONFIG.routes[0]!, backend: 'missing' }] } } } as GatewayConfig;
  assert.throws(() => compileAgents(bad), /agents\.x\.routes\[0\]\.backend: unknown backend "missing"/);
});
