/**
 * A scripted episode set through a real gateway with a 50/50 split over two real loopback agents: four BENCH-like
 * slots driven over four batches with env feedback strings we control, so every number of the report, every
 * execution feedback metric line and the report command's table are known in advance.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { reportCommand } from '../../src/commands/report.js';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import type { AgentInput } from '../../src/protocol/types.js';
import { chooseArm } from '../helpers/split.js';
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

/** The tag's routing members (the trajectory members are checked apart). */
function where(c: Cand): Record<string, unknown> {
  const t = c.memory._gateway as Record<string, unknown>;
  return Object.fromEntries(['backend', 'route', 'arm'].filter((k) => t[k] !== undefined).map((k) => [k, t[k]]));
}

function env(id: number, content: string, memory: Record<string, unknown>, extra: Record<string, unknown> = AB): object {
  return mkInput(id, { instruction: { type: 'env', content }, memory, extra_keys: extra });
}

let a: FakeAgent;
let b: FakeAgent;
let gw: TestGateway;
let report: ExperimentsReport;
let metricsText: string;


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
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [
      { name: 'ab', match: { 'extra_keys.experiment': 'ab' }, split: { a: 1, b: 1 } },
      { name: 'default', backend: 'a' },
    ],
  });

  // Batch 1: four new trajectories, slots 0 and 1 on arm a, 2 and 3 on arm b.
  const r1 = await postOk(gw, requestIdFor('r1', [[0, 'a'], [1, 'a'], [2, 'b'], [3, 'b']]), [0, 1, 2, 3].map((i) => mkInput(i, { extra_keys: AB })));
  assert.deepEqual(r1.map(where), [
    { backend: 'a', route: 'ab', arm: 'a' }, { backend: 'a', route: 'ab', arm: 'a' },
    { backend: 'b', route: 'ab', arm: 'b' }, { backend: 'b', route: 'ab', arm: 'b' },
  ]);
  // Each new trajectory has its own id, at step 1 with nothing counted yet.
  assert.equal(new Set(r1.map((c) => c.memory._gateway?.trajectory)).size, 4);
  for (const c of r1) {
    const t = c.memory._gateway!;
    assert.match(t.trajectory ?? '', /^[0-9a-f]{32}$/);
    assert.deepEqual([t.step, t.s, t.n, t.stages, t.flags], [1, 0, 0, 0, '']);
    assert.match(t.hash ?? '', /^[0-9a-f]{64}$/);
  }

  // Batch 2: the environment reports on batch 1's decisions.
  const r2 = await postOk(gw, 'r2', [
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
  const r3 = await postOk(gw, requestIdFor('r3', [[3, 'b']]), [
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
  assert.deepEqual(where(r3[3]!), { backend: 'b', route: 'ab', arm: 'b' });
  assert.equal(r3[3]!.memory._gateway?.flags, 'c', 'an error candidate marks its trajectory');
  // Slot 1's trajectory after two env steps: 2 of 3 robot lines succeeded, a failure reason seen.
  assert.deepEqual([r3[1]!.memory._gateway?.step, r3[1]!.memory._gateway?.s, r3[1]!.memory._gateway?.n, r3[1]!.memory._gateway?.flags], [3, 2, 3, 'f']);

  // Batch 4, attribution semantics:
  // slot 0: reports on arm a's decision but no longer matches the split (routed by `default`): counted for ab/a;
  // slot 1: a forged tag naming an unknown route and backend: ignored for feedback, a new trajectory on the split;
  // slot 2: continues on b, with an explicit null error;
  // slot 3: a tag of the plain `default` route: metric only (the report lists split and ensemble routes).
  const r4 = await postOk(gw, requestIdFor('r4', [[1, 'a']]), [
    env(0, '{"infos": "dish_robot: place failed with message: dropped"}', r3[0]!.memory, {}),
    env(1, '{"infos": "dish_robot: pick succeed with message: forged"}', { _gateway: { backend: 'zzz', route: 'nope' } }),
    env(2, '{"infos": "table_robot: place succeed with message: ok", "error": null}', r3[2]!.memory),
    env(3, '{"infos": "dish_robot: pick failed with message: x"}', { _gateway: { backend: 'a', route: 'default' } }, {}),
  ]);
  assert.deepEqual(r4.map(where), [
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
  assert.deepEqual(report.experiments.map((r) => [r.route, r.kind, r.control, r.primary, r.unit]), [['ab', 'split', 'a', 'tool_success', 'trajectory']]);
  assert.deepEqual(report.experiments[0]!.arms.map((x) => [x.arm, x.weight, x.member]), [['a', 1, true], ['b', 1, true]]);
  assert.match(report.experiments[0]!.experiment.id, /^[0-9a-f]{16}$/);
  assert.ok(!Number.isNaN(Date.parse(report.experiments[0]!.experiment.started_at ?? '')));
});

// The trajectories, by hand. Arm a: slot 0 (steps r1-r3, then routed by `default`: no longer the split's),
// s = 1 of n = 1; slot 1 (r1-r3) s = 2 of n = 3 with a failure reason; the forged tag of r4 slot 1 starts a new
// trajectory with 1 of 1. Arm b: slot 2 (r1-r4) 1 of 2, an env error and a failure reason; slot 3 (r1-r2) none;
// the "boom" episode (r3 slot 3) none, an error candidate.
const A = { s: [1, 2, 1], n: [1, 3, 1], steps: [3, 3, 1] };
const B = { s: [1, 0, 0], n: [2, 0, 0], steps: [4, 2, 1] };
const sum = (xs: number[]): number => xs.reduce((t, x) => t + x, 0);
const dot = (xs: number[], ys: number[]): number => xs.reduce((t, x, i) => t + x * ys[i]!, 0);

test('per-arm counts: trajectories, steps, candidates, error codes, trajectory shares', () => {
  const [ra, rb] = report.experiments[0]!.arms;
  assert.deepEqual(
    { k: ra!.trajectories, steps: ra!.steps, candidates: ra!.candidates, codes: ra!.error_codes, env: ra!.env_error_share, fr: ra!.failure_reason_share, ec: ra!.error_candidate_share },
    { k: 3, steps: sum(A.steps), candidates: { completed: 7, error: 0 }, codes: {}, env: 0, fr: 1 / 3, ec: 0 },
  );
  assert.deepEqual(
    { k: rb!.trajectories, steps: rb!.steps, candidates: rb!.candidates, codes: rb!.error_codes, env: rb!.env_error_share, fr: rb!.failure_reason_share, ec: rb!.error_candidate_share },
    { k: 3, steps: sum(B.steps), candidates: { completed: 6, error: 1 }, codes: { model_error: 1 }, env: 1 / 3, fr: 1 / 3, ec: 1 / 3 },
  );
  assert.deepEqual(rb!.feedback, { tool_succeeded: 1, tool_failed: 1, env_error: 1, failure_reason: 1, unparsed: 1, other: 0 });
  assert.equal(ra!.steps_per_trajectory, 7 / 3);
  assert.equal(ra!.stages_per_trajectory, 0);
});

test('tool success by trajectory: the sums and the delta-method interval, computed here from the trajectories', async () => {
  const [ra, rb] = report.experiments[0]!.arms;
  assert.deepEqual([ra!.tool_success.successes, ra!.tool_success.lines, ra!.tool_success.rate], [sum(A.s), sum(A.n), 0.8]);
  assert.deepEqual([rb!.tool_success.successes, rb!.tool_success.lines, rb!.tool_success.rate], [sum(B.s), sum(B.n), 0.5]);
  // The store's sums of squares and products are those of the trajectories.
  const id = report.experiments[0]!.experiment.id;
  const c = await gw.app.gateway.store.counters.read(`experiments:default/ab/${id}`);
  assert.deepEqual([c['a|ss'], c['a|nn'], c['a|sn']], [dot(A.s, A.s), dot(A.n, A.n), dot(A.s, A.n)]);
  assert.deepEqual([c['b|ss'], c['b|nn'], c['b|sn']], [dot(B.s, B.s), dot(B.n, B.n), dot(B.s, B.n)]);
  // Delta method by hand: r = S/N, V = K/(K-1) (Qss - 2 r Qsn + r^2 Qnn) / N^2, interval r +- 1.959964 sqrt(V).
  const r = 0.8;
  const v = (3 / 2) * (dot(A.s, A.s) - 2 * r * dot(A.s, A.n) + r * r * dot(A.n, A.n)) / sum(A.n) ** 2;
  near(ra!.tool_success.ci95?.[0], r - 1.959964 * Math.sqrt(v), 1e-6, 'a lower');
  near(ra!.tool_success.ci95?.[1], Math.min(1, r + 1.959964 * Math.sqrt(v)), 1e-6, 'a upper');
  // b has one trajectory with a robot line: no comparison of tool success, and the report says why.
  const primary = report.experiments[0]!.comparisons.find((x) => x.primary)!;
  assert.deepEqual([primary.arm, primary.control, primary.metric, primary.fixed, primary.sequential], ['b', 'a', 'tool_success', null, null]);
  assert.match(primary.label, /^process metric/);
  assert.equal(primary.sequential_reason, 'needs 20 trajectories per arm');
  assert.equal(primary.fixed_reason, 'needs 2 trajectories with a robot line per arm');
});

test('latency: one sample per leg of the split, percentiles near each agent\'s delay', () => {
  const [ra, rb] = report.experiments[0]!.arms;
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

test('the report command prints that state for a researcher', async () => {
  let out = '';
  let err = '';
  const code = await reportCommand(['--url', `${gw.adminUrl}/`], { out: (t) => void (out += t), err: (t) => void (err += t) });
  assert.equal(code, 0, err);
  const lines = out.split('\n');
  assert.ok(lines.some((l) => l.startsWith('agent default (/) route ab: split, experiment ')), out);
  const row = (arm: string): string[] => lines.find((l) => l.startsWith(`${arm} `))!.trim().split(/\s{2,}/);
  // ARM WEIGHT TRAJ STEPS LINES TOOL-SUCCESS ...
  assert.deepEqual(row('a').slice(0, 5), ['a', '1', '3', '7', '4/5']);
  assert.deepEqual(row('b').slice(0, 6), ['b', '1', '3', '7', '1/2', '50.0%']);
  assert.equal(row('b').at(-1), 'model_error 1');
  assert.ok(lines.some((l) => l.startsWith('PRIMARY b - a, tool success (process metric')), out);
});
