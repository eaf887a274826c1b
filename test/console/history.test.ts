/**
 * The experiment history (src/experiments/history.ts) and the store parts under it (lists.push, lists.read,
 * claims.claim), on both stores: the memory store, and the Redis at 127.0.0.1:6379 under a unique prefix, where two
 * gateway replicas sharing it write one snapshot per interval between them. Time is a StepClock.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ExperimentHistory, HISTORY_KEY } from '../../src/experiments/report/history.js';
import { MemoryStore } from '../../src/state/memory-store.js';
import { RedisStore } from '../../src/state/redis-store.js';
import type { Store } from '../../src/state/types.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, postOk, startGateway, type TestGateway } from '../helpers/gateway.js';
import { http } from '../helpers/config-file.js';
import { experimentsReport, type ExperimentsReport } from '../../src/experiments/report/report.js';
import { noteReport, readFinals } from '../../src/experiments/report/finals.js';
import { StepClock } from '../helpers/step-clock.js';
import { waitFor } from '../helpers/wait.js';
import { deleteKeys, memoryConfig, recordingLog, redisConfig, sharedRedis, uniquePrefix, waitUntilUp } from '../state/helpers.js';

const agents: FakeAgent[] = [];
const gateways: TestGateway[] = [];

/** A gateway built in-process as the CLI builds it: its state is the history's host (report, store, config). */
async function gateway(state: Record<string, unknown> = {}): Promise<TestGateway> {
  const [a, b] = [await startFakeAgent({ name: 'a' }), await startFakeAgent({ name: 'b' })];
  agents.push(a, b);
  const gw = await startGateway({
    experiments: { snapshot_interval_s: 60, snapshot_points: 3 },
    state,
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [{ name: 'ab', split: { a: 50, b: 50 } }],
  });
  gateways.push(gw);
  return gw;
}

const stores: Store[] = [];
const prefixes: string[] = [];
after(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await Promise.all(agents.map((a) => a.close()));
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(prefixes.map((p) => deleteKeys(p)));
});

async function makeStore(kind: 'memory' | 'redis', prefix?: string): Promise<Store> {
  const log = recordingLog();
  let store: Store;
  if (kind === 'memory') store = new MemoryStore(memoryConfig(), log);
  else {
    const p = prefix ?? uniquePrefix();
    prefixes.push(p);
    store = new RedisStore(redisConfig(p), log);
    assert.ok(await waitUntilUp(store, 5000), 'redis at 127.0.0.1:6379 is up');
  }
  stores.push(store);
  return store;
}

for (const kind of ['memory', 'redis'] as const) {
  describe(`${kind} store: capped lists and claims`, () => {
    test('lists.push keeps the last max entries, oldest first; lists.read of nothing is empty', async () => {
      const s = await makeStore(kind);
      assert.deepEqual(await s.lists.read('l'), []);
      for (const v of ['1', '2', '3', '4', '5']) await s.lists.push('l', v, 3, 60_000);
      assert.deepEqual(await s.lists.read('l'), ['3', '4', '5']);
      await s.lists.push('l', '6', 2, 60_000);
      assert.deepEqual(await s.lists.read('l'), ['5', '6'], 'a smaller max trims at the next push');
    });

    test('a list is forgotten ttlMs after its last push', async () => {
      const s = await makeStore(kind);
      await s.lists.push('short', 'x', 5, 400);
      assert.deepEqual(await s.lists.read('short'), ['x']);
      await waitFor('the list expired', async () => (await s.lists.read('short')).length === 0, { timeoutMs: 5000 });
    });

    test('claim: the first caller wins until the claim expires', async () => {
      const s = await makeStore(kind);
      assert.deepEqual(await s.claims.claim('slot-1', 'me', 400), { first: true, value: 'me' });
      assert.deepEqual(await s.claims.claim('slot-1', 'you', 400), { first: false, value: 'me' });
      assert.deepEqual(await s.claims.claim('slot-2', 'you', 400), { first: true, value: 'you' }, 'another key is its own claim');
      await waitFor('the claim expired', async () => (await s.claims.claim('slot-1', 'later', 400)).first, { timeoutMs: 5000 });
      assert.deepEqual(await s.claims.claim('slot-1', 'you', 400), { first: false, value: 'later' });
    });
  });
}

test('a snapshot every interval, at most snapshot_points kept, each point from the report', async () => {
  const gw = await gateway();
  const clock = new StepClock();
  clock.advance(1_700_000_000_000); // an epoch time: points carry ISO times
  const history = new ExperimentHistory(() => gw.app.gateway, recordingLog(), clock);
  history.start();
  assert.deepEqual(await history.read(), []);
  for (let i = 0; i < 5; i++) {
    clock.advance(60_000);
    await new Promise((r) => setImmediate(r)); // the snapshot's store calls settle
    await new Promise((r) => setImmediate(r));
  }
  history.stop();
  const points = await history.read();
  assert.equal(points.length, 3, 'snapshot_points = 3');
  const times = points.map((p) => Date.parse(p.at));
  assert.deepEqual(times.map((t, i) => (i === 0 ? 0 : t - times[i - 1]!)), [0, 60_000, 60_000]);
  const ab = points[0]!.experiments.find((e) => e.route === 'ab')!;
  assert.equal(ab.agent, 'default');
  assert.deepEqual(ab.trajectories, { a: 0, b: 0 });
  // No trajectory yet: each comparison of b against the control a, with nothing computable.
  assert.ok(ab.comparisons.length >= 1);
  for (const c of ab.comparisons) assert.deepEqual([c.arm, c.control, c.difference, c.fixed_ci95, c.sequential_ci95], ['b', 'a', null, null, null]);
});

/** Two gateways on one Redis key prefix, each with its own history writer on one shared step clock. */
async function twoReplicas() {
  const prefix = uniquePrefix();
  prefixes.push(prefix);
  const redis = { redis: sharedRedis(prefix) };
  const [g1, g2] = [await gateway(redis), await gateway(redis)];
  for (const g of [g1, g2]) assert.ok(await waitUntilUp(g.app.gateway.store, 5000), 'redis at 127.0.0.1:6379 is up');
  const clock = new StepClock();
  clock.advance(1_800_000_000_000);
  const h1 = new ExperimentHistory(() => g1.app.gateway, recordingLog(), clock);
  const h2 = new ExperimentHistory(() => g2.app.gateway, recordingLog(), clock);
  return { g1, g2, h1, h2, clock };
}

test('two replicas on one Redis write one snapshot per interval between them', async () => {
  const { g1, h1, h2, clock } = await twoReplicas();
  let written = 0;
  for (let i = 0; i < 3; i++) {
    const wrote = await Promise.all([h1.snapshot(), h2.snapshot()]);
    assert.equal(wrote.filter(Boolean).length, 1, `interval ${i}: exactly one replica wrote`);
    written++;
    clock.advance(60_000);
  }
  assert.equal((await h1.read()).length, written);
  assert.deepEqual(await h1.read(), await h2.read(), 'the same history from either replica');
  assert.equal((await g1.app.gateway.store.lists.read(HISTORY_KEY)).length, 3);
});

test('the first point as soon as an experiment has a result, written once between two replicas; none before', async () => {
  const { g1, h1, h2 } = await twoReplicas();
  assert.deepEqual(await Promise.all([h1.firstResults(), h2.firstResults()]), [false, false], 'no result yet: no point');
  // Trajectories with tool lines on both arms: the comparison has a difference.
  const feedback = (ok: boolean) => JSON.stringify({ infos: `arm_robot: pick ${ok ? 'succeed' : 'failed'} with message: x`, previous_tool_call: { arm_robot: { name: 'pick', arguments: {} } } });
  const ids = Array.from({ length: 12 }, (_, i) => i);
  let cands = await postOk(g1, 'h-1', ids.map((i) => mkInput(i)));
  for (const step of [2, 3]) {
    cands = await postOk(g1, `h-${step}`, ids.map((i) => mkInput(i, { instruction: { type: 'env', content: feedback((i + step) % 3 !== 0) }, memory: cands[i]!.memory })));
  }
  const wrote = await Promise.all([h1.firstResults(), h2.firstResults()]);
  assert.equal(wrote.filter(Boolean).length, 1, 'one replica wrote the first point');
  const points = await h1.read();
  assert.equal(points.length, 1);
  assert.notEqual(points[0]!.experiments[0]!.comparisons[0]!.difference, null);
  assert.deepEqual(await Promise.all([h1.firstResults(), h2.firstResults()]), [false, false], 'once per experiment');
});

test('an ended experiment keeps its final report: at a reset as it was just before, and once', async () => {
  const g = await gateway();
  await postOk(g, 'f-1', [mkInput(1), mkInput(2)]);
  const before = await experimentsReport(g.app.gateway);
  const reset = await http(`${g.adminUrl}/gateway/experiments/reset`, { method: 'POST', body: {} });
  assert.equal(reset.status, 200, reset.text);
  const earlier = await http(`${g.adminUrl}/gateway/experiments/earlier`);
  const finals = (earlier.json as { experiments: { experiment: { id: string }; arms: { trajectories: number }[]; ended_at: string }[] }).experiments;
  assert.equal(finals.length, 1);
  assert.equal(finals[0]!.experiment.id, before.experiments[0]!.experiment.id);
  assert.deepEqual(finals[0]!.arms.map((a) => a.trajectories), before.experiments[0]!.arms.map((a) => a.trajectories));
  // A snapshot after the reset sees the new id; the ended experiment's final is not written twice.
  const history = new ExperimentHistory(() => g.app.gateway, recordingLog());
  assert.equal(await history.snapshot(), true);
  assert.equal(((await http(`${g.adminUrl}/gateway/experiments/earlier`)).json as { experiments: unknown[] }).experiments.length, 1);
});

test('a change of arms keeps the earlier experiment\'s report as the last snapshot saw it', async () => {
  const store = await makeStore('memory');
  const e = (id: string, n: number) => ({ agent: 'default', route: 'ab', experiment: { id, name: null, started_at: `2026-12-0${n}T00:00:00.000Z` }, arms: [{ arm: 'a', trajectories: n }] });
  const report = (x: ReturnType<typeof e>) => ({ generated_at: '2026-12-05T00:00:00.000Z', store: 'memory', experiments: [x], earlier: [] }) as unknown as ExperimentsReport; // the fields finals.ts reads
  await noteReport(store, report(e('old', 1)));
  await noteReport(store, report(e('old', 2)));
  assert.deepEqual(await readFinals(store), [], 'still running');
  await noteReport(store, report(e('new', 3)));
  const finals = (await readFinals(store)) as { experiment: { id: string }; arms: { trajectories: number }[]; ended_at: string }[];
  assert.deepEqual(finals.map((f) => [f.experiment.id, f.arms[0]!.trajectories, f.ended_at]), [['old', 2, '2026-12-03T00:00:00.000Z']]);
  await noteReport(store, report(e('new', 4)));
  assert.equal((await readFinals(store)).length, 1);
});
