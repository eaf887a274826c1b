/**
 * Arms beyond the plain split: ensemble members (the arm is the backend that produced the candidate), a split
 * arm served by a fallback (accounting follows the assignment, the metric names the producing backend), and a
 * fallback that served an ensemble's single leg (an arm of its own, flagged member: false).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ArmReport } from '../../src/experiments/arm-counts.js';
import type { ExperimentReport, ExperimentsReport } from '../../src/experiments/report/report.js';
import { chooseArm } from '../helpers/split.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway, postOk } from '../helpers/gateway.js';

let a: FakeAgent;
let b: FakeAgent;
let c: FakeAgent;
let gw: TestGateway;
let report: ExperimentsReport;
let metricsText: string;


function env(id: number, content: string, memory: Record<string, unknown>, mode: string, n = 1): object {
  return mkInput(id, { instruction: { type: 'env', content }, memory, extra_keys: { mode }, num_outputs: n });
}

before(async () => {
  [a, b, c] = await Promise.all([startFakeAgent({ name: 'a' }), startFakeAgent({ name: 'b' }), startFakeAgent({ name: 'c' })]);
  gw = await startGateway({
    backends: { a: { url: a!.url }, b: { url: b!.url }, c: { url: c!.url } },
    routes: [
      { name: 'gen', match: { 'extra_keys.mode': 'gen' }, ensemble: { a: 1, b: 1 }, sticky: false },
      { name: 'ab', match: { 'extra_keys.mode': 'ab' }, split: { a: 1, b: 1 }, fallback: ['c'] },
      { name: 'gen1', match: { 'extra_keys.mode': 'gen1' }, ensemble: { b: 1, a: 1 }, fallback: ['c'] },
      { name: 'default', backend: 'a' },
    ],
  });

  // An ensemble of two candidates, then the environment's answer to b's candidate, ensembled again.
  const g1 = await postOk(gw, 'g1', [mkInput(0, { extra_keys: { mode: 'gen' }, num_outputs: 2 })]);
  assert.deepEqual(g1.map((x) => x.memory._gateway?.backend), ['a', 'b']);
  const g2 = await postOk(gw, 'g2', [env(0, '{"infos": "r: pick succeed with message: ok"}', g1[1]!.memory, 'gen', 2)]);
  assert.deepEqual(g2.map((x) => x.memory._gateway?.backend), ['a', 'b']);

  // b is down: a split trajectory assigned to b is served by the fallback c, and so is gen1's single leg on b.
  b!.setBehaviour({ status: 500 });
  let rid = 'f0';
  for (let k = 0; chooseArm(rid, 1, [{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }]) !== 'b'; k++) rid = `f${k}`;
  const f1 = await postOk(gw, rid, [mkInput(1, { extra_keys: { mode: 'ab' } }), mkInput(2, { extra_keys: { mode: 'gen1' } })]);
  assert.deepEqual(f1.map((x) => where(x)), [{ backend: 'c', route: 'ab', arm: 'b' }, { backend: 'c', route: 'gen1' }]);
  // The fallback's step is a crossover of the trajectory assigned b, marked in its tag.
  assert.equal(f1[0]!.memory._gateway?.flags, 'x');
  b!.setBehaviour({});
  // The env answer to the fallback's decision: sticky, so it continues on c.
  await postOk(gw, 'f2', [env(1, '{"infos": "r: place failed with message: no"}', f1[0]!.memory, 'ab')]);

  report = (await (await fetch(`${gw.adminUrl}/gateway/experiments`)).json()) as ExperimentsReport;
  metricsText = await (await fetch(`${gw.url}/metrics`)).text();
});

after(async () => {
  await gw?.close();
  await Promise.all([a, b, c].map((x) => x?.close()));
});

/** The tag's routing members (the trajectory members are checked elsewhere). */
function where(c: Cand): Record<string, unknown> {
  const t = c.memory._gateway as Record<string, unknown>;
  return Object.fromEntries(['backend', 'route', 'arm'].filter((k) => t[k] !== undefined).map((k) => [k, t[k]]));
}

function route(name: string): ExperimentReport {
  const r = report.experiments.find((x) => x.route === name);
  assert.ok(r, `no route ${name}`);
  return r;
}

function summary(x: ArmReport): unknown[] {
  return [x.arm, x.member, x.trajectories, x.steps, x.candidates.completed, x.candidates.error,
    x.feedback.tool_succeeded, x.feedback.tool_failed, x.latency_ms.samples];
}

test('the report lists split and ensemble routes in config order, not the plain route', () => {
  assert.deepEqual(report.experiments.map((r) => [r.route, r.kind, r.srm === null]), [
    ['gen', 'ensemble', true], ['ab', 'split', false], ['gen1', 'ensemble', true],
  ]);
});

test('ensemble members: the trajectory is counted once, on the member of its first leg; candidates by their producer', () => {
  const r = route('gen');
  // [arm, member, trajectories, steps, completed, error, succeeded, failed, latency samples]
  // g1 starts one trajectory (unit on a, its first leg); g2 continues it from b's candidate: b's step.
  assert.deepEqual(r.arms.map(summary), [
    ['a', true, 1, 1, 2, 0, 0, 0, 2],
    ['b', true, 0, 1, 2, 0, 1, 0, 2],
  ]);
});

test('a split arm served by its fallback is still that arm (intention to treat), reported as a crossover', () => {
  const r = route('ab');
  // b's latency has three calls: its own that failed (HTTP 500), the fallback's for that step, and the next step's.
  assert.deepEqual(r.arms.map(summary), [
    ['a', true, 0, 0, 0, 0, 0, 0, 0],
    ['b', true, 1, 2, 2, 0, 0, 1, 3],
  ]);
  assert.equal(r.arms[1]!.latency_ms.failed, 1);
  assert.equal(r.arms[1]!.crossover.trajectories, 1);
  assert.equal(r.arms[1]!.crossover.share, 1);
  assert.ok(r.arms[1]!.crossover.since !== null && !Number.isNaN(Date.parse(r.arms[1]!.crossover.since)));
  assert.ok(r.warnings.some((w) => w.includes('crossover')), r.warnings.join('\n'));
  // a has no trajectory: the comparison says why there is no number.
  const primary = r.comparisons.find((c) => c.primary)!;
  assert.deepEqual([primary.arm, primary.control, primary.fixed], ['b', 'a', null]);
  assert.ok(primary.fixed_reason !== null);
  assert.match(metricsText, /magma_gateway_execution_feedback_total\{[^}]*route="ab"[^}]*backend="c"[^}]*\} 1|magma_gateway_execution_feedback_total\{[^}]*backend="c"[^}]*route="ab"[^}]*\} 1/);
});

test('a fallback that served an ensemble leg without an arm shows as its own non-member arm', () => {
  const r = route('gen1');
  // b's failed call before the fallback is b's latency sample (and failed call), c's answer is c's.
  assert.deepEqual(r.arms.map(summary), [
    ['b', true, 1, 1, 0, 0, 0, 0, 1],
    ['a', true, 0, 0, 0, 0, 0, 0, 0],
    ['c', false, 0, 0, 1, 0, 0, 0, 1],
  ]);
});
