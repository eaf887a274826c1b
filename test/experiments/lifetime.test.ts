/**
 * An experiment's lifetime and its trust checks, through a real gateway started from a config file and real
 * loopback agents: arm b's backend is not ready when the experiment starts, so every trajectory lands on a and
 * the report flags a sample-ratio mismatch with its cause; `magma-gateway check` against the gateway leaves the
 * experiment untouched; a reload that changes the weights starts a new experiment (the old one listed apart,
 * never summed); `POST /gateway/experiments/reset` starts afresh.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { checkCommand } from '../../src/commands/check.js';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { chooseArm } from '../helpers/split.js';
import { startGatewayFromFile, type FileGateway } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const ARMS = [{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }];

let a: FakeAgent;
let b: FakeAgent;
let gw: FileGateway;

function config(split: Record<string, number>): Record<string, unknown> {
  return {
    probe_interval_s: 0.2,
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [{ name: 'ab', split }],
  };
}

async function report(): Promise<ExperimentsReport> {
  const res = await gw.admin('/gateway/experiments');
  assert.equal(res.status, 200, res.text);
  return res.json as ExperimentsReport;
}

async function newTrajectories(requestId: string, n: number): Promise<void> {
  const res = await gw.post({ request_id: requestId, inputs: Array.from({ length: n }, (_, i) => mkInput(i)) });
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  [a, b] = await Promise.all([startFakeAgent({ name: 'a' }), startFakeAgent({ name: 'b', behaviour: { health: 503 } })]);
  gw = await startGatewayFromFile(config({ a: 1, b: 1 }));
  await waitFor('b probed not ready', () => !gw.app.gateway.current.upstreams.canServe('b') && gw.app.gateway.current.upstreams.canServe('a'));
  await newTrajectories('s1', 30);
});

after(async () => {
  await gw?.close();
  await Promise.all([a?.close(), b?.close()]);
});

test('an arm not ready at the start: SRM flagged with its cause, first warning, untrustworthy, metric set', async () => {
  const drawnB = Array.from({ length: 30 }, (_, i) => chooseArm('s1', i, ARMS)).filter((x) => x === 'b').length;
  assert.ok(drawnB > 5, `the weights drew b ${drawnB} times`);
  const e = (await report()).experiments[0]!;
  assert.deepEqual(e.srm?.observed, { a: 30, b: 0 });
  assert.deepEqual(e.srm?.expected, { a: 15, b: 15 });
  assert.equal(e.srm?.flagged, true);
  assert.ok(e.srm!.p_value! < 1e-6 && e.srm!.sequential_p_value! < 0.001, JSON.stringify(e.srm));
  assert.equal(e.srm?.cause, `${drawnB} trajectories rerouted from b: not ready`);
  assert.equal(e.trustworthy, false);
  // The verdict names the cause in the served JSON, before the burn-in is reached on b.
  assert.equal(e.verdict.state, 'not_trustworthy');
  assert.equal(e.verdict.arm, null);
  assert.ok(e.verdict.text.includes(`cause: ${drawnB} trajectories rerouted from b: not ready`), e.verdict.text);
  assert.match(e.warnings[0]!, /^sample-ratio mismatch \(p = [0-9.e+-]+\): trajectories a 30, b 0, expected a 15, b 15; cause: \d+ trajectories rerouted from b: not ready/);
  assert.deepEqual(e.arms.map((x) => x.rerouted_from.not_ready), [0, drawnB]);
  const metrics = (await gw.call('/metrics')).text;
  assert.match(metrics, /magma_gateway_experiment_srm_flagged\{agent="default",route="ab"\} 1/);
  assert.match(metrics, /magma_gateway_trajectories_started_total\{agent="default",route="ab",arm="a"\} 30/);
});

test('magma-gateway check against the gateway leaves the experiment untouched', async () => {
  const before = await report();
  let out = '';
  await checkCommand([gw.url, '--timeout', '10'], { out: (t) => void (out += t), err: (t) => void (out += t) });
  assert.ok(out.length > 0);
  const afterCheck = await report();
  assert.deepEqual(afterCheck.experiments[0]!.arms.map((x) => [x.arm, x.trajectories, x.steps]), before.experiments[0]!.arms.map((x) => [x.arm, x.trajectories, x.steps]));
  assert.equal(afterCheck.experiments[0]!.experiment.id, before.experiments[0]!.experiment.id);
});

test('a reload that changes the weights starts a new experiment; the old one is listed apart, never summed', async () => {
  const first = (await report()).experiments[0]!;
  b.setBehaviour({});
  const res = await gw.reload(config({ a: 2, b: 1 }));
  assert.equal(res.status, 200, res.text);
  const r = await report();
  const now = r.experiments[0]!;
  assert.notEqual(now.experiment.id, first.experiment.id);
  assert.deepEqual(now.arms.map((x) => [x.arm, x.weight, x.trajectories]), [['a', 2, 0], ['b', 1, 0]]);
  assert.deepEqual(r.earlier.map((e) => [e.route, e.experiment.id, e.arms]), [['ab', first.experiment.id, [{ arm: 'a', trajectories: 30 }, { arm: 'b', trajectories: 0 }]]]);
  assert.equal(r.earlier[0]!.experiment.started_at, first.experiment.started_at);
  // The same weights again are the first experiment again (its id is its arms and weights): counted on.
  await gw.reload(config({ a: 1, b: 1 }));
  assert.equal((await report()).experiments[0]!.experiment.id, first.experiment.id);
  await gw.reload(config({ a: 2, b: 1 }));
});

test('reset starts afresh on every replica of the route; unknown routes are a 404', async () => {
  await waitFor('b ready again', () => gw.app.gateway.current.upstreams.canServe('b'));
  await newTrajectories('s2', 4);
  const before = (await report()).experiments[0]!;
  assert.equal(before.arms.reduce((n, x) => n + x.trajectories, 0), 4);
  const res = await gw.admin('/gateway/experiments/reset', { method: 'POST', body: { route: 'ab' } });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.json, { reset: [{ agent: 'default', route: 'ab' }] });
  const r = await report();
  const now = r.experiments[0]!;
  assert.notEqual(now.experiment.id, before.experiment.id);
  assert.equal(now.arms.reduce((n, x) => n + x.trajectories, 0), 0);
  assert.deepEqual(r.earlier.map((e) => e.arms.reduce((n, x) => n + x.trajectories, 0)), [4, 30], 'newest first');
  // The new experiment started at the reset, before its first trajectory; the previous one ended there.
  assert.ok(now.experiment.started_at !== null && now.experiment.started_at >= before.experiment.started_at!);
  assert.equal(r.earlier[0]!.ended_at, now.experiment.started_at);
  await newTrajectories('s3', 2);
  const later = await report();
  assert.equal(later.experiments[0]!.arms.reduce((n, x) => n + x.trajectories, 0), 2);
  assert.equal(later.experiments[0]!.experiment.started_at, now.experiment.started_at);
  const bad = await gw.admin('/gateway/experiments/reset', { method: 'POST', body: { route: 'nope' } });
  assert.equal(bad.status, 404);
  assert.match((bad.json as { detail: string }).detail, /no split or ensemble route matches route "nope"/);
});

test('a reload after a reset: the reset experiment keeps its real lifetime, the new one starts with its first trajectory', async () => {
  const reset = (await report()).experiments[0]!;
  assert.ok(reset.experiment.started_at !== null);
  const res = await gw.reload(config({ a: 1, b: 2 }));
  assert.equal(res.status, 200, res.text);
  const before = await report();
  // Before its first trajectory the new experiment's start is not known: not the reset's time, which the
  // experiment before it took (that gave the earlier one started_at = ended_at).
  assert.notEqual(before.experiments[0]!.experiment.id, reset.experiment.id);
  assert.equal(before.experiments[0]!.experiment.started_at, null);
  assert.equal(before.earlier[0]!.experiment.id, reset.experiment.id);
  await newTrajectories('s4', 2);
  const r = await report();
  const now = r.experiments[0]!.experiment;
  const earlier = r.earlier[0]!;
  assert.equal(earlier.experiment.id, reset.experiment.id);
  assert.equal(earlier.experiment.started_at, reset.experiment.started_at);
  assert.ok(now.started_at !== null && now.started_at > reset.experiment.started_at!, `${now.started_at} after ${reset.experiment.started_at}`);
  assert.equal(earlier.ended_at, now.started_at);
  assert.ok(earlier.ended_at! > earlier.experiment.started_at!);
});
