/**
 * A scripted episode set through a real gateway with a 50/50 split over two real loopback agents: four BENCH-like
 * slots driven over four batches with env feedback strings we control, so every number of the report, every
 * execution feedback metric line and the report command's table are known in advance.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { reportCommand } from '../../src/commands/report.js';
import type { ExperimentsReport } from '../../src/experiments/report.js';
import type { AgentInput } from '../../src/protocol/types.js';
import { chooseArm } from '../../src/routing/split.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway, postOk } from '../helpers/gateway.js';

const ARMS = [{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }];
const AB = { experiment: 'ab' };
const PICK = { dish_robot: { name: 'pick', arguments: { object: 'plate_1' } } };

/** A request_id under which each listed new-trajectory input id is assigned the wanted arm. */
function requestIdFor(prefix: string, wants: [number, string][]): string {
  for (let k = 0; k < 10_000; k++) {
    const id = `${prefix}-${k}`;
    if (wants.every(([input, arm]) => chooseArm(id, input, ARMS) === arm)) return id;
  }
  throw new Error('no request id found');
}

function env(id: number, content: string, memory: Record<string, unknown>, extra: Record<string, unknown> = AB): object {
  return mkInput(id, { instruction: { type: 'env', content }, memory, extra_keys: extra });
}

let a: FakeAgent;
let b: FakeAgent;
let gw: TestGateway;
let report: ExperimentsReport;
let metricsText: string;

const post = (requestId: string, inputs: object[]): Promise<Cand[]> => postOk(gw, requestId, inputs);

before(async () => {
  a = await startFakeAgent({ name: 'a', behaviour: { delayMs: 10 } });
  b = await startFakeAgent({
    name: 'b',
    behaviour: {
      delayMs: 80,
      // A new episode whose task is "boom" gets an agent error candidate: one error code to account for.
      candidate: (input: AgentInput) =>
        input.instruction.content === 'boom'
          ? { status: 'error', output: null, error: { code: 'model_error', message: 'b failed', component: 'model' } }
          : {},
    },
  });
  gw = await startGateway({
    probe_interval_s: 3600,
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [
      { name: 'ab', match: { 'extra_keys.experiment': 'ab' }, split: { a: 1, b: 1 } },
      { name: 'default', backend: 'a' },
    ],
  });

  // Batch 1: four new trajectories, slots 0 and 1 on arm a, 2 and 3 on arm b.
  const r1 = await post(requestIdFor('r1', [[0, 'a'], [1, 'a'], [2, 'b'], [3, 'b']]), [0, 1, 2, 3].map((i) => mkInput(i, { extra_keys: AB })));
  assert.deepEqual(r1.map((c) => c.memory._gateway), [
    { backend: 'a', route: 'ab', arm: 'a' }, { backend: 'a', route: 'ab', arm: 'a' },
    { backend: 'b', route: 'ab', arm: 'b' }, { backend: 'b', route: 'ab', arm: 'b' },
  ]);

  // Batch 2: the environment reports on batch 1's decisions.
  const r2 = await post('r2', [
    env(0, JSON.stringify({ infos: 'dish_robot: pick succeed with message: plate_1 grasped', previous_tool_call: PICK }), r1[0]!.memory),
    env(1, JSON.stringify({
      infos: 'dish_robot: pick succeed with message: ok\ntable_robot: place failed with message: blocked',
      previous_tool_call: PICK,
      failure_reason: 'a cup is in the way',
    }), r1[1]!.memory),
    env(2, '{"error": "simulator crashed"}', r1[2]!.memory),
    env(3, 'not json at all', r1[3]!.memory),
  ]);

  // Batch 3: slot 3 starts a new episode (fresh memory) that lands on b and fails there.
  const r3 = await post(requestIdFor('r3', [[3, 'b']]), [
    env(0, JSON.stringify({ infos: 'The action has completed.', previous_tool_call: PICK }), r2[0]!.memory),
    env(1, '{"infos": "dish_robot: wash succeed with message: clean"}', r2[1]!.memory),
    env(2, JSON.stringify({
      infos: 'table_robot: place failed with message: out of reach',
      previous_tool_call: { table_robot: { name: 'place', arguments: {} } },
      failure_reason: 'the table is too far',
    }), r2[2]!.memory),
    mkInput(3, { instruction: { type: 'user', content: 'boom' }, extra_keys: AB }),
  ]);
  assert.equal(r3[3]!.status, 'error');
  assert.deepEqual(r3[3]!.memory._gateway, { backend: 'b', route: 'ab', arm: 'b' });

  // Batch 4, attribution semantics:
  // slot 0: reports on arm a's decision but no longer matches the split (routed by `default`): counted for ab/a;
  // slot 1: a forged tag naming an unknown route and backend: ignored for feedback, a new trajectory on the split;
  // slot 2: continues on b, with an explicit null error;
  // slot 3: a tag of the plain `default` route: metric only (the report lists split and ensemble routes).
  const r4 = await post(requestIdFor('r4', [[1, 'a']]), [
    env(0, '{"infos": "dish_robot: place failed with message: dropped"}', r3[0]!.memory, {}),
    env(1, '{"infos": "dish_robot: pick succeed with message: forged"}', { _gateway: { backend: 'zzz', route: 'nope' } }),
    env(2, '{"infos": "table_robot: place succeed with message: ok", "error": null}', r3[2]!.memory),
    env(3, '{"infos": "dish_robot: pick failed with message: x"}', { _gateway: { backend: 'a', route: 'default' } }, {}),
  ]);
  assert.deepEqual(r4.map((c) => c.memory._gateway), [
    { backend: 'a', route: 'default' }, { backend: 'a', route: 'ab', arm: 'a' },
    { backend: 'b', route: 'ab', arm: 'b' }, { backend: 'a', route: 'default' },
  ]);

  const res = await fetch(`${gw.adminUrl}/gateway/experiments`);
  assert.equal(res.status, 200);
  report = (await res.json()) as ExperimentsReport;
  metricsText = await (await fetch(`${gw.url}/metrics`)).text();
});

after(async () => {
  await gw?.close();
  await Promise.all([a?.close(), b?.close()]);
});

function near(actual: number | null | undefined, expected: number, tol: number, what: string): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tol, `${what}: ${actual} != ${expected} ± ${tol}`);
}

test('only the split route is reported, with its members in config order', () => {
  assert.equal(report.store, 'memory');
  assert.deepEqual(report.routes.map((r) => [r.route, r.kind, r.sticky, r.members]), [['ab', 'split', true, { a: 1, b: 1 }]]);
  assert.deepEqual(report.routes[0]!.arms.map((x) => [x.arm, x.member]), [['a', true], ['b', true]]);
});

test('per-arm counts: trajectories, steps, candidates, error codes, feedback', () => {
  const [ra, rb] = report.routes[0]!.arms;
  // a: started r1 x2 + r4 slot 1 (forged tag) = 3; steps 2 + 2 + 2 + 1 = 7, all completed.
  assert.deepEqual(
    { started: ra!.trajectories_started, steps: ra!.steps, candidates: ra!.candidates, codes: ra!.error_codes, fb: ra!.feedback },
    {
      started: 3, steps: 7, candidates: { completed: 7, error: 0 }, codes: {},
      fb: { tool_succeeded: 3, tool_failed: 2, env_error: 0, failure_reason: 1, unparsed: 0, other: 1 },
    },
  );
  // b: started r1 x2 + r3 slot 3 = 3; steps 2 + 2 + 2 + 1 = 7; the "boom" episode is its one error candidate.
  assert.deepEqual(
    { started: rb!.trajectories_started, steps: rb!.steps, candidates: rb!.candidates, codes: rb!.error_codes, fb: rb!.feedback },
    {
      started: 3, steps: 7, candidates: { completed: 6, error: 1 }, codes: { model_error: 1 },
      fb: { tool_succeeded: 1, tool_failed: 1, env_error: 1, failure_reason: 1, unparsed: 1, other: 0 },
    },
  );
});

test('tool success rates with Wilson intervals, and the b - a comparison', () => {
  const [ra, rb] = report.routes[0]!.arms;
  assert.equal(ra!.tool_success.rate, 0.6);
  near(ra!.tool_success.ci95?.[0], 0.2307, 1e-4, 'a lower');
  near(ra!.tool_success.ci95?.[1], 0.8824, 1e-4, 'a upper');
  assert.equal(rb!.tool_success.rate, 0.5);
  near(rb!.tool_success.ci95?.[0], 0.0945, 1e-4, 'b lower');
  near(rb!.tool_success.ci95?.[1], 0.9055, 1e-4, 'b upper');
  const c = report.routes[0]!.comparison!;
  assert.deepEqual([c.a, c.b, c.metric], ['a', 'b', 'tool_success_rate']);
  near(c.difference, -0.1, 1e-12, 'difference'); // 1/2 - 3/5
  // Newcombe by hand: -0.1 - sqrt((0.5 - 0.0945)^2 + (0.8824 - 0.6)^2) = -0.5942;
  // -0.1 + sqrt((0.9055 - 0.5)^2 + (0.6 - 0.2307)^2) = 0.4485.
  near(c.ci95?.[0], -0.5942, 1e-4, 'ci lower');
  near(c.ci95?.[1], 0.4485, 1e-4, 'ci upper');
  near(c.z, -0.241523, 1e-6, 'z');
  near(c.p_value, 0.80915, 1e-5, 'p');
});

test('latency: one sample per leg of the split, percentiles near each agent\'s delay', () => {
  const [ra, rb] = report.routes[0]!.arms;
  assert.equal(ra!.latency_ms.samples, 7);
  assert.equal(rb!.latency_ms.samples, 7);
  // Each arm's figures are its own legs': at least its agent's delay (less the bucket error, under 19%), and
  // the slow arm's above the fast one's. How far above depends on the machine's load, so no upper bound.
  for (const [arm, delay] of [[ra!, 10], [rb!, 80]] as const) {
    assert.ok(arm.latency_ms.p50! >= delay * 0.8, `${arm.arm} p50 ${arm.latency_ms.p50}`);
    assert.ok(arm.latency_ms.p95! >= arm.latency_ms.p50!, `${arm.arm} p95`);
  }
  assert.ok(rb!.latency_ms.p50! > ra!.latency_ms.p50!, `b (80 ms) p50 ${rb!.latency_ms.p50} above a (10 ms) p50 ${ra!.latency_ms.p50}`);
});

/** `name{labels} value` lines of one metric, labels sorted, as a map. */
function series(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (m === null) continue;
    const labels = m[1]!.split(',').sort().join(',');
    out.set(labels, Number(m[2]));
  }
  return out;
}

test('execution feedback metric: by the incoming tag, bounded labels, no `other` outcome', () => {
  const got = series(metricsText, 'magma_gateway_execution_feedback_total');
  const want = new Map<string, number>();
  const put = (route: string, backend: string, outcome: string, n: number): void => {
    want.set(['agent="default"', `backend="${backend}"`, `outcome="${outcome}"`, `route="${route}"`].join(','), n);
  };
  put('ab', 'a', 'tool_succeeded', 3);
  put('ab', 'a', 'tool_failed', 2);
  put('ab', 'a', 'failure_reason', 1);
  put('ab', 'b', 'tool_succeeded', 1);
  put('ab', 'b', 'tool_failed', 1);
  put('ab', 'b', 'env_error', 1);
  put('ab', 'b', 'failure_reason', 1);
  put('ab', 'b', 'unparsed', 1);
  put('default', 'a', 'tool_failed', 1);
  assert.deepEqual(new Map([...got].filter(([, n]) => n > 0)), want);
  // Every (route, backend of the route, outcome) exists from the start, at 0 until it happens: 2x5 for ab, 1x5 default.
  assert.equal(got.size, 15);
  assert.ok(!metricsText.includes('"zzz"') && !metricsText.includes('"nope"'));
});

test('the report command prints that state as a table', async () => {
  let out = '';
  let err = '';
  const code = await reportCommand(['--url', `${gw.adminUrl}/`], { out: (t) => void (out += t), err: (t) => void (err += t) });
  assert.equal(code, 0, err);
  const lines = out.split('\n');
  assert.ok(lines.includes('route ab: split a 1, b 1'), out);
  const row = (arm: string): string[] => lines.find((l) => l.startsWith(`${arm} `))!.trim().split(/\s{2,}/);
  // ARM TRAJ STEPS DONE ERR OK/FAIL SUCCESS ENV_ERR FAIL_REASON UNPARSED P50 P95 CODES
  assert.deepEqual(row('a').slice(0, 10), ['a', '3', '7', '7', '0', '3/2', '60.0% [23.1%, 88.2%]', '0', '1', '0']);
  assert.equal(row('a')[12], '-');
  assert.deepEqual(row('b').slice(0, 10), ['b', '3', '7', '6', '1', '1/1', '50.0% [9.5%, 90.5%]', '1', '1', '1']);
  assert.equal(row('b')[12], 'model_error 1');
  assert.ok(
    lines.includes('b - a tool success rate: -10.0 pts [95% CI -59.4, +44.8], z = -0.24, p = 0.809 (two-sided pooled two-proportion z-test)'),
    out,
  );
});
