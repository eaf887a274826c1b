/**
 * Ensembles (docs/routing.md#ensembles): candidates of one input drawn from several agents, renumbered
 * in member order.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway } from '../helpers/gateway.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function setup(route: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ a: FakeAgent; b: FakeAgent; c: FakeAgent; gw: TestGateway }> {
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((name) => startFakeAgent({ name })));
  const gw = await startGateway({
    backends: { a: { url: a!.url, eject_after_failures: 100 }, b: { url: b!.url, eject_after_failures: 100 }, c: { url: c!.url } },
    routes: [{ name: 'ens', ...route }],
    ...extra,
  });
  cleanup.push(async () => {
    await gw.close();
    await Promise.all([a!.close(), b!.close(), c!.close()]);
  });
  return { a: a!, b: b!, c: c!, gw };
}

test('8 candidates over a 1:1 ensemble come 4 from each member, renumbered 0..7 in member order', async () => {
  const { a, b, gw } = await setup({ ensemble: { a: 1, b: 1 } });
  const res = await gw.post({ request_id: 'e', inputs: [mkInput(1, { num_outputs: 8 })] });
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => c.candidate_index), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(cands.map((c) => c.output!.say), [
    'a:1:0', 'a:1:1', 'a:1:2', 'a:1:3', 'b:1:0', 'b:1:1', 'b:1:2', 'b:1:3',
  ]);
  assert.deepEqual(cands.map((c) => c.memory._gateway!.backend), ['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b']);
  const sentA = a.requestsTo('/v1/responses')[0]!.body as { inputs: { num_outputs: number }[] };
  const sentB = b.requestsTo('/v1/responses')[0]!.body as { inputs: { num_outputs: number }[] };
  assert.equal(sentA.inputs[0]!.num_outputs, 4);
  assert.equal(sentB.inputs[0]!.num_outputs, 4);
});

test('5 candidates over 2:1 come 3 + 2; 1 over 1:1 comes from the first member only', async () => {
  const { b, gw } = await setup({ ensemble: { a: 2, b: 1 } });
  const five = (await gw.post({ request_id: 'f', inputs: [mkInput(1, { num_outputs: 5 })] })).json as Cand[];
  assert.deepEqual(five.map((c) => c.memory._gateway!.backend), ['a', 'a', 'a', 'b', 'b']);
  const g2 = await setup({ ensemble: { a: 1, b: 1 } });
  const one = (await g2.gw.post({ request_id: 'o', inputs: [mkInput(1)] })).json as Cand[];
  assert.deepEqual(one.map((c) => c.memory._gateway!.backend), ['a']);
  assert.equal(g2.b.requestsTo('/v1/responses').length, 0);
  assert.ok(b);
});

test('a failed ensemble member yields error candidates in its slots only', async () => {
  const { b, gw } = await setup({ ensemble: { a: 1, b: 1 } });
  b.setBehaviour((r) => (r.path === '/v1/responses' ? { status: 500 } : {}));
  const cands = (await gw.post({ request_id: 'x', inputs: [mkInput(1, { num_outputs: 4 })] })).json as Cand[];
  assert.deepEqual(cands.map((c) => c.status), ['completed', 'completed', 'error', 'error']);
  assert.equal(cands[2]!.error!.code, 'gateway_backend_http_error');
  assert.equal(cands[2]!.error!.component, 'b');
});

test('a failed ensemble member falls back per the route', async () => {
  const { b, gw } = await setup({ ensemble: { a: 1, b: 1 }, fallback: ['c'] });
  b.setBehaviour((r) => (r.path === '/v1/responses' ? { status: 503 } : {}));
  const cands = (await gw.post({ request_id: 'y', inputs: [mkInput(1, { num_outputs: 4 })] })).json as Cand[];
  assert.deepEqual(cands.map((c) => c.output?.say), ['a:1:0', 'a:1:1', 'c:1:0', 'c:1:1']);
  assert.deepEqual(cands.map((c) => c.candidate_index), [0, 1, 2, 3]);
});

async function threeSteps(gw: TestGateway): Promise<string[][]> {
  // Step 1: 4 candidates; steps 2-3: follow candidate 2 (produced by b) with 4 candidates each.
  const seen: string[][] = [];
  let memory: Record<string, unknown> = {};
  for (let step = 0; step < 3; step++) {
    const cands = (await gw.post({ request_id: `s${step}`, inputs: [mkInput(1, { num_outputs: 4, memory })] })).json as Cand[];
    seen.push(cands.map((c) => c.memory._gateway!.backend));
    memory = cands[2]!.memory;
  }
  return seen;
}

test('a sticky:false ensemble keeps ensembling on later steps', async () => {
  const { gw } = await setup({ ensemble: { a: 1, b: 1 }, sticky: false });
  assert.deepEqual(await threeSteps(gw), [['a', 'a', 'b', 'b'], ['a', 'a', 'b', 'b'], ['a', 'a', 'b', 'b']]);
});

test('a sticky ensemble continues each trajectory on the backend of the candidate it follows', async () => {
  const { gw } = await setup({ ensemble: { a: 1, b: 1 } });
  assert.deepEqual(await threeSteps(gw), [['a', 'a', 'b', 'b'], ['b', 'b', 'b', 'b'], ['b', 'b', 'b', 'b']]);
});
