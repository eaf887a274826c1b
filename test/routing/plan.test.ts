/**
 * Batch planning: route choice, stickiness, coaching, split arms, ensemble legs (docs/protocol-fidelity.md#the-path-of-a-batch
 *  to "Ensembles").
 * Pure: a config string, a request and a snapshot in, a plan out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfigText } from '../../src/config/load.js';
import type { AgentInput, JsonObject } from '../../src/protocol/types.js';
import { compileAgents } from '../../src/routing/agents.js';
import {
  planBatch,
  readMemoryTag,
  type BatchPlan,
  type RoutingSnapshot,
} from '../../src/routing/plan.js';
import { agentInput } from '../helpers/inputs.js';
import { decodedInput } from '../../src/routing/routing-input.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';

const CONFIG = parseConfigText(
  [
    'backends:',
    '  qwen: { url: http://127.0.0.1:8001 }',
    '  gpt: { url: http://127.0.0.1:8002 }',
    '  llama: { url: http://127.0.0.1:8003 }',
    'routes:',
    '  - name: feedback',
    '    match: { instruction_type: env, memory.phase: plan }',
    '    backend: llama',
    '  - name: tier',
    '    match: { header.x-tier: gold }',
    '    backend: gpt',
    '  - name: ab',
    '    match: { extra_keys.experiment: ab }',
    '    split: { qwen: 90, gpt: 10 }',
    '    fallback: [llama]',
    '  - name: ensemble',
    '    match: { extra_keys.ensemble: true }',
    '    ensemble: { qwen: 2, gpt: 1 }',
    '    sticky: false',
    '    fallback: [qwen, gpt]',
    '  - name: default',
    '    backend: qwen',
    '    fallback: [gpt, qwen]',
    '    shadow: [llama]',
  ].join('\n'),
  'plan-test.yaml',
  {},
);
const ROUTES = compileAgents(CONFIG).root!.routes; // CONFIG has top-level routes, so a default agent

const ALL: RoutingSnapshot = { canServe: () => true };
const without =
  (...down: string[]): RoutingSnapshot =>
  ({ canServe: (b) => !down.includes(b) });

const input = agentInput;

function tagged(backend: string, route: string, extra: JsonObject = {}): JsonObject {
  return { history: ['x'], _gateway: { backend, route, ...extra } };
}

function plan(inputs: AgentInput[], snapshot = ALL, headers: Record<string, string> = {}): BatchPlan {
  return planBatch({ request_id: 'req-1', inputs: inputs.map(decodedInput) }, ROUTES, snapshot, { headers });
}

function one(inp: AgentInput, snapshot = ALL, headers: Record<string, string> = {}) {
  return plan([inp], snapshot, headers).inputs[0]!;
}

test('an empty batch plans nothing', () => {
  assert.deepEqual(plan([]), { inputs: [] });
});

test('the first matching route wins and inputs keep their order', () => {
  const p = plan([input({ id: 5, extra_keys: { ensemble: true } }), input({ id: 3 })]);
  assert.deepEqual(
    p.inputs.map((i) => [i.index, i.route]),
    [
      [0, 'ensemble'],
      [1, 'default'],
    ],
  );
});

test('a backend route sends every candidate to its backend; fallbacks skip the leg backend', () => {
  const p = one(input({ num_outputs: 3 }));
  assert.deepEqual(p, {
    index: 0,
    route: 'default',
    sticky: true,
    continued: false,
    legs: [{ backend: 'qwen', count: 3, offset: 0, fallbacks: ['gpt'] }],
    shadows: ['llama'],
  });
});

test('memory.<path> matches on the memory the client sent', () => {
  const p = one(input({ instruction: { type: 'env', content: '{}' }, memory: { phase: 'plan' } }));
  assert.equal(p.route, 'feedback');
});

test('header.<name> conditions read the request headers from the context', () => {
  assert.equal(one(input(), ALL, { 'x-tier': 'gold' }).route, 'tier');
  assert.equal(one(input(), ALL, {}).route, 'default');
});

test('a split route assigns a new trajectory to a weighted arm, the same one on replay', () => {
  const inp = input({ id: 77, num_outputs: 2, extra_keys: { experiment: 'ab' } });
  const first = one(inp);
  assert.equal(first.route, 'ab');
  assert.ok(first.arm === 'qwen' || first.arm === 'gpt');
  assert.deepEqual(first.legs, [{ backend: first.arm, count: 2, offset: 0, fallbacks: ['llama'] }]);
  assert.deepEqual(one(inp), first);
});

test('an ensemble route gives each member its share with cumulative offsets', () => {
  const p = one(input({ num_outputs: 5, extra_keys: { ensemble: true } }));
  assert.deepEqual(p.legs, [
    { backend: 'qwen', count: 3, offset: 0, fallbacks: ['gpt'] },
    { backend: 'gpt', count: 2, offset: 3, fallbacks: ['qwen'] },
  ]);
});

test('an ensemble member whose share rounds to zero gets no leg', () => {
  const p = one(input({ num_outputs: 1, extra_keys: { ensemble: true } }));
  assert.deepEqual(
    p.legs.map((l) => [l.backend, l.count, l.offset]),
    [['qwen', 1, 0]],
  );
});

test('a sticky route continues a tagged trajectory on its backend with all candidates', () => {
  const p = one(input({ num_outputs: 3, extra_keys: { experiment: 'ab' }, memory: tagged('gpt', 'ab') }));
  assert.equal(p.continued, true);
  assert.equal(p.arm, 'gpt');
  assert.deepEqual(p.legs, [{ backend: 'gpt', count: 3, offset: 0, fallbacks: ['llama'] }]);
  assert.deepEqual(p.tag, { backend: 'gpt', route: 'ab' });
});

test('a trajectory that fell back stays on the fallback backend and keeps its arm', () => {
  const p = one(input({ extra_keys: { experiment: 'ab' }, memory: tagged('llama', 'ab', { arm: 'qwen' }) }));
  assert.equal(p.continued, true);
  assert.equal(p.arm, 'qwen');
  assert.deepEqual(p.legs, [{ backend: 'llama', count: 1, offset: 0, fallbacks: [] }]);
});

test('a tagged backend that cannot serve is reassigned by the route', () => {
  const inp = input({ id: 9, extra_keys: { experiment: 'ab' }, memory: tagged('gpt', 'ab') });
  const p = one(inp, without('gpt'));
  assert.equal(p.continued, false);
  assert.equal(p.arm, 'qwen');
  assert.deepEqual(p.tag, { backend: 'gpt', route: 'ab' });
});

test("a tag naming a backend outside the input's route is reassigned", () => {
  const p = one(input({ memory: tagged('llama', 'feedback') }));
  assert.equal(p.route, 'default');
  assert.equal(p.continued, false);
  assert.equal(p.legs[0]!.backend, 'qwen');
});

test('a sticky: false route ignores the tag and ensembles again', () => {
  const p = one(input({ num_outputs: 3, extra_keys: { ensemble: true }, memory: tagged('gpt', 'ensemble') }));
  assert.equal(p.sticky, false);
  assert.equal(p.continued, false);
  assert.deepEqual(
    p.legs.map((l) => l.backend),
    ['qwen', 'gpt'],
  );
});

test('a coaching input goes back to its tagged backend, even outside its route', () => {
  const p = one(input({ num_outputs: 2, extra_keys: { coaching: { kind: 'rule' } }, memory: tagged('llama', 'feedback') }));
  assert.equal(p.route, 'default');
  assert.equal(p.continued, true);
  assert.deepEqual(p.legs, [{ backend: 'llama', count: 2, offset: 0, fallbacks: ['gpt', 'qwen'] }]);
});

test('a coaching input on a sticky: false route still goes back to its tagged backend', () => {
  const inp = input({ extra_keys: { ensemble: true, coaching: true }, memory: tagged('gpt', 'ensemble') });
  assert.deepEqual(
    one(inp).legs.map((l) => l.backend),
    ['gpt'],
  );
});

test('coaching whose tagged backend cannot serve is routed normally', () => {
  const p = one(input({ extra_keys: { coaching: true }, memory: tagged('llama', 'feedback') }), without('llama'));
  assert.equal(p.continued, false);
  assert.equal(p.legs[0]!.backend, 'qwen');
});

test('extra_keys.coaching: false is not coaching', () => {
  const p = one(input({ extra_keys: { coaching: false }, memory: tagged('llama', 'feedback') }));
  assert.equal(p.continued, false);
});

test('readMemoryTag reads backend, route and an optional arm', () => {
  assert.deepEqual(readMemoryTag(tagged('qwen', 'ab', { arm: 'qwen', at: 3 }), '_gateway'), {
    backend: 'qwen',
    route: 'ab',
    arm: 'qwen',
  });
});

test('readMemoryTag returns undefined for a missing or malformed tag', () => {
  assert.equal(readMemoryTag({}, '_gateway'), undefined);
  assert.equal(readMemoryTag({ _gateway: 'qwen' }, '_gateway'), undefined);
  assert.equal(readMemoryTag({ _gateway: { backend: 'qwen' } }, '_gateway'), undefined);
  assert.equal(readMemoryTag({ _gateway: { backend: 7, route: 'ab' } }, '_gateway'), undefined);
  assert.equal(readMemoryTag({ _gateway: ['qwen', 'ab'] }, '_gateway'), undefined);
  assert.deepEqual(readMemoryTag({ _gateway: { backend: 'q', route: 'r', arm: 5 } }, '_gateway'), { backend: 'q', route: 'r' });
});

test('the memory tag of an input read by the indexer is read from its member, the memory left undecoded', () => {
  const text =
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},' +
    '"memory":{"history":["x"],"_gateway":{"backend":"gpt","route":"default"}}}]}';
  const r = readAgentRequest(Buffer.from(text), { maxOutputsPerInput: 4, maxJsonDepth: 32, memoryKey: '_gateway' });
  assert.ok(r.ok);
  const plan = planBatch(r.request, ROUTES, ALL, { headers: {} });
  assert.deepEqual(plan.inputs[0]?.tag, { backend: 'gpt', route: 'default' });
  assert.deepEqual(plan.inputs[0]?.legs.map((l) => l.backend), ['gpt'], 'sticky on the tagged backend');
  assert.equal(r.request.inputs[0]?.raw.memory.decoded, false);
});
