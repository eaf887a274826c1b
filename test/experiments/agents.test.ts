/**
 * Experiments per agent (docs/routing.md#virtual-agents, docs/experiments.md): two agents
 * and the default agent each have a split route named `ab` over the same backends; their counts never mix, in
 * the store, in GET /gateway/experiments, in the feedback metric and in `magma-gateway report`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { reportCommand } from '../../src/commands/report.js';
import { countersKey } from '../../src/experiments/keys.js';
import type { ExperimentReport, ExperimentsReport } from '../../src/experiments/report/report.js';
import { http } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway } from '../helpers/gateway.js';

let a: FakeAgent;
let b: FakeAgent;
let gw: TestGateway;
let report: ExperimentsReport;

const AB_ROUTE = { name: 'ab', split: { a: 1, b: 1 } };

async function send(path: string, id: string, inputs: object[]): Promise<Cand[]> {
  const res = await http(`${gw.url}${path}`, { method: 'POST', body: { request_id: id, inputs } });
  assert.equal(res.status, 200, res.text);
  return res.json as Cand[];
}

before(async () => {
  [a, b] = await Promise.all([startFakeAgent({ name: 'a' }), startFakeAgent({ name: 'b' })]);
  gw = await startGateway({
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [AB_ROUTE],
    agents: { kitchen: { agent: { agent_id: 'kitchen-ab' }, routes: [AB_ROUTE] }, lab: { routes: [AB_ROUTE] } },
  });
  // Kitchen: 3 new trajectories, then env feedback on each (3 more steps, one robot line that succeeded each).
  const first = await send('/agents/kitchen/v1/responses', 'k1', [mkInput(0), mkInput(1), mkInput(2)]);
  const ok = '{"infos": "dish_robot: pick succeed with message: ok"}';
  await send('/agents/kitchen/v1/responses', 'k2', first.map((c, i) => mkInput(i, { instruction: { type: 'env', content: ok }, memory: c.memory })));
  // The default agent: one new trajectory. Lab: none.
  await send('/v1/responses', 'r1', [mkInput(0)]);
  const res = await http(`${gw.adminUrl}/gateway/experiments`);
  assert.equal(res.status, 200);
  report = res.json as ExperimentsReport;
});

after(async () => {
  await gw?.close();
  await Promise.all([a?.close(), b?.close()]);
});

const steps = (r: ExperimentReport | undefined): number => (r?.arms ?? []).reduce((n, x) => n + x.steps, 0);
const started = (r: ExperimentReport | undefined): number => (r?.arms ?? []).reduce((n, x) => n + x.trajectories, 0);
const of = (agent: string): ExperimentReport | undefined => report.experiments.find((e) => e.agent === agent);

test('the report lists the default agent\'s experiments, then each virtual agent\'s, each counted apart', () => {
  assert.deepEqual(report.experiments.map((x) => [x.agent, x.path, x.route]), [
    ['default', '/', 'ab'],
    ['kitchen', '/agents/kitchen/', 'ab'],
    ['lab', '/agents/lab/', 'ab'],
  ]);
  const ids = new Set(report.experiments.map((x) => x.experiment.id));
  assert.equal(ids.size, 3, 'the same route on three agents is three experiments');
  assert.deepEqual([started(of('kitchen')), steps(of('kitchen'))], [3, 6]);
  assert.deepEqual([started(of('default')), steps(of('default'))], [1, 1]);
  assert.deepEqual([started(of('lab')), steps(of('lab'))], [0, 0]);
  const tools = (of('kitchen')?.arms ?? []).reduce((n, x) => n + x.tool_success.successes, 0);
  assert.equal(tools, 3, 'the feedback went to the kitchen agent only');
  assert.equal((of('default')?.arms ?? []).reduce((n, x) => n + x.tool_success.successes, 0), 0);
});

test('counters are kept per agent, route and experiment', async () => {
  const root = of('default')!;
  assert.equal(countersKey('default', 'ab', root.experiment.id), `experiments:default/ab/${root.experiment.id}`);
  const counters = await gw.app.gateway.store.counters.read(countersKey('default', 'ab', root.experiment.id));
  const sum = Object.entries(counters).filter(([f]) => f.endsWith('|steps')).reduce((n, [, v]) => n + v, 0);
  assert.equal(sum, 1);
});

test('the feedback metric carries the agent, so the same route name on two agents stays apart', async () => {
  const text = (await http(`${gw.url}/metrics`)).text;
  const total = (agent: string): number =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`magma_gateway_execution_feedback_total{agent="${agent}",route="ab",`) && l.includes('outcome="tool_succeeded"'))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  assert.deepEqual([total('kitchen'), total('default'), total('lab')], [3, 0, 0]);
});

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await reportCommand(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

test('the report command shows each agent\'s block; --agent shows one, and an unknown one is an error', async () => {
  const all = await run([gw.adminUrl]);
  assert.equal(all.code, 0, all.err);
  const heads = all.out.split('\n').filter((l) => l.startsWith('agent '));
  assert.deepEqual(heads.map((l) => l.split(':')[0]), ['agent default (/) route ab', 'agent kitchen (/agents/kitchen/) route ab', 'agent lab (/agents/lab/) route ab']);
  const one = await run([gw.adminUrl, '--agent', 'kitchen', '--json']);
  assert.equal(one.code, 0, one.err);
  const narrowed = JSON.parse(one.out) as ExperimentsReport;
  assert.deepEqual(narrowed.experiments.map((x) => x.agent), ['kitchen']);
  const root = await run([gw.adminUrl, '--agent', 'default']);
  assert.equal(root.code, 0, root.err);
  assert.ok(!root.out.includes('agent kitchen') && root.out.includes('route ab'), root.out);
  const bad = await run([gw.adminUrl, '--agent', 'kichen']);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /no agent "kichen" \(agents: default, kitchen, lab\)/);
});
