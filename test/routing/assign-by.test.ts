/**
 * assign_by (docs/experiments.md#assigning-by-a-key): a split draws the arm from a value of the first input,
 * salted with what names the experiment; an input without the value is drawn per (request_id, input id). Pure:
 * a config, inputs and a snapshot in, plans out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { compileAgents } from '../../src/routing/agents.js';
import { planBatch, type CompiledRoutes, type InputPlan, type RoutingSnapshot } from '../../src/routing/plan.js';
import { decodedInput } from '../../src/routing/routing-input.js';
import { agentInput } from '../helpers/inputs.js';

function routes(extra: Record<string, unknown> = {}, split: Record<string, number> = { a: 1, b: 1 }): CompiledRoutes {
  const config = parseConfigText(
    JSON.stringify({
      backends: { a: { url: 'http://127.0.0.1:9' }, b: { url: 'http://127.0.0.1:9' } },
      routes: [{ name: 'ab', split, assign_by: 'attributes.scenario', ...extra }],
    }),
    'assign-by.yaml',
    {},
  );
  const root = compileAgents(config).root;
  if (root === undefined) throw new Error('the config has top-level routes');
  return root.routes;
}

const ALL: RoutingSnapshot = { canServe: () => true };

function planOf(r: CompiledRoutes, requestId: string, attributes: Record<string, unknown>, id = 0, snapshot = ALL): InputPlan {
  const p = planBatch({ request_id: requestId, inputs: [decodedInput(agentInput({ id, attributes }))] }, r, snapshot, { headers: {} }).inputs[0];
  if (p === undefined) throw new Error('one input, one plan');
  return p;
}

test('every trajectory of one key gets the same arm, whatever its request_id and input id', () => {
  const r = routes();
  for (let k = 0; k < 20; k++) {
    const arms = new Set(Array.from({ length: 10 }, (_, i) => planOf(r, `req-${k}-${i}`, { scenario: `scenario-${k}` }, i).arm));
    assert.equal(arms.size, 1, `key scenario-${k} went to ${[...arms].join(', ')}`);
  }
  const p = planOf(r, 'req', { scenario: 'kitchen' });
  assert.equal(p.assignKey, 'kitchen');
  assert.equal(planOf(r, 'req', { scenario: 7 }).assignKey, '7');
});

test('keys are spread by the weights, and a new experiment name draws them afresh', () => {
  const count = (r: CompiledRoutes): Map<string, string | undefined> => new Map(Array.from({ length: 4000 }, (_, k) => [`s${k}`, planOf(r, 'req', { scenario: `s${k}` }).arm]));
  const even = count(routes());
  const share = [...even.values()].filter((a) => a === 'a').length / even.size;
  // 4000 keys at 1:1: SD 0.8%, the band is about 4 SD.
  assert.ok(share > 0.47 && share < 0.53, `share of a ${share}`);
  const skewed = count(routes({}, { a: 9, b: 1 }));
  const shareA = [...skewed.values()].filter((a) => a === 'a').length / skewed.size;
  assert.ok(shareA > 0.88 && shareA < 0.92, `share of a at 9:1 ${shareA}`);
  const renamed = count(routes({ experiment: { name: 'second' } }));
  const moved = [...even].filter(([k, a]) => renamed.get(k) !== a).length / even.size;
  // Independent draws at 1:1 disagree half of the time.
  assert.ok(moved > 0.45 && moved < 0.55, `keys moved ${moved}`);
});

test('an input without the key is drawn per (request_id, input id), and says so by having no assignKey', () => {
  const r = routes();
  const arms = new Set<string | undefined>();
  for (let i = 0; i < 40; i++) {
    const p = planOf(r, `req-${i}`, {}, i);
    assert.equal(p.assignKey, undefined);
    arms.add(p.arm);
  }
  assert.deepEqual([...arms].sort(), ['a', 'b']);
  assert.equal(planOf(r, 'req', { scenario: null }).assignKey, undefined);
});

test('an arm that cannot serve: the key is rerouted and the drawn arm recorded for the SRM cause', () => {
  const r = routes();
  const key = Array.from({ length: 50 }, (_, k) => `k${k}`).find((k) => planOf(r, 'req', { scenario: k }).arm === 'a');
  assert.ok(key !== undefined);
  const p = planOf(r, 'req', { scenario: key }, 0, { canServe: (b) => b !== 'a' });
  assert.equal(p.arm, 'b');
  assert.equal(p.drawnArm, 'a');
});

function problems(route: Record<string, unknown>, experiments: Record<string, unknown> = {}): string[] {
  try {
    parseConfigText(JSON.stringify({ backends: { a: { url: 'http://127.0.0.1:9' }, b: { url: 'http://127.0.0.1:9' } }, experiments, routes: [route] }), 'bad.yaml', {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
  assert.fail('expected a ConfigError');
}

test('validate refuses a malformed assign_by or stratify_by path, and assign_by off a split', () => {
  for (const bad of ['scenario', 'attributes.', 'attributes..x', 'memory.x', 'header.x', 'attributes.a b']) {
    const p = problems({ name: 'ab', split: { a: 1, b: 1 }, assign_by: bad });
    assert.ok(p.some((l) => l.includes('assign_by') && l.includes('attributes.<path> or extra_keys.<path>')), `${bad}: ${p.join('; ')}`);
  }
  assert.ok(problems({ name: 'one', backend: 'a', assign_by: 'attributes.scenario' }).some((l) => l.includes('assign_by applies to a split route only')));
  const s = problems({ name: 'ab', split: { a: 1, b: 1 } }, { stratify_by: 'scenario' });
  assert.ok(s.some((l) => l.includes('stratify_by') && l.includes('attributes.<path>')), s.join('; '));
});
