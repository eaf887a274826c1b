/**
 * Counting once: a replayed batch (same request_id, recomputed because replay is off, or answered from the replay
 * store) does not double-count; a forked tag (an old memory re-sent, or two GEN branches of one candidate) counts
 * a new trajectory with its own id that holds only the steps after the fork, never its parent's history again. The same scenario with the memory store, and with Redis across two gateway
 * replicas, each step sent to either: the Redis replicas report identical JSON (generated_at aside), and the
 * numbers are those of the memory store.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { mkInput, postOk, type Cand, type TestGateway } from '../helpers/gateway.js';
import { timeless, useMemoryAndRedis, type TwoBackends } from './helpers.js';

const OK = JSON.stringify({ infos: 'dish_robot: pick succeed with message: ok' });
const BAD = JSON.stringify({ infos: 'dish_robot: pick failed with message: no' });

function config(backends: TwoBackends, state: Record<string, unknown>): Record<string, unknown> {
  return {
    state: { replay_ttl_s: 0, ...state },
    backends,
    routes: [{ name: 'ab', split: { x: 1, y: 1 } }],
  };
}

const env = (id: number, content: string, memory: Record<string, unknown>, n = 1): object =>
  mkInput(id, { instruction: { type: 'env', content }, memory, num_outputs: n });

interface Run {
  report: ExperimentsReport;
  replayed: [Cand[], Cand[]];
  fork: { parent: Cand; child: Cand };
  branches: [Cand, Cand];
}

/** The scenario; `on(k)` is the gateway the k-th step goes to. */
async function scenario(on: (k: number) => TestGateway): Promise<Run> {
  const r1 = await postOk(on(0), 'r1', [0, 1, 2, 3, 4, 5].map((i) => mkInput(i)));
  // The same batch again (BENCH retrying after a timeout): recomputed, the same tags, counted once.
  const again = await postOk(on(1), 'r1', [0, 1, 2, 3, 4, 5].map((i) => mkInput(i)));
  const r2 = await postOk(on(2), 'r2', r1.map((c, i) => env(i, i % 3 === 0 ? BAD : OK, c.memory)));
  await postOk(on(3), 'r2', r1.map((c, i) => env(i, i % 3 === 0 ? BAD : OK, c.memory)));
  // Slot 0 goes on (its third step), then its second-step memory, which holds a failed line, is sent again with
  // another continuation: a fork, a trajectory of its own, without the parent's line.
  await postOk(on(4), 'r2b', [env(0, OK, r2[0]!.memory)]);
  const [child] = await postOk(on(5), 'r3', [env(0, OK, r2[0]!.memory)]);
  // Two GEN branches of one new trajectory, each continued: the second continuation is a fork.
  const branches = await postOk(on(6), 'r4', [mkInput(9, { num_outputs: 2 })]);
  const [b0] = await postOk(on(7), 'r5', [env(9, OK, branches[0]!.memory)]);
  const [b1] = await postOk(on(8), 'r6', [env(9, BAD, branches[1]!.memory)]);
  for (const g of new Set([on(0), on(1)])) await g.app.gateway.store.counters.flush();
  const res = await fetch(`${on(0).adminUrl}/gateway/experiments`);
  return { report: (await res.json()) as ExperimentsReport, replayed: [r1, again], fork: { parent: r2[0]!, child: child! }, branches: [b0!, b1!] };
}

const runs = useMemoryAndRedis(config, scenario);

for (const [store, run] of [['memory', () => runs().memory], ['redis, two replicas', () => runs().redis]] as const) {
  test(`${store}: a replayed batch gets the same tags and is counted once`, () => {
    const { replayed, report } = run();
    assert.deepEqual(replayed[1].map((c) => c.memory._gateway), replayed[0].map((c) => c.memory._gateway));
    const arms = report.experiments[0]!.arms;
    // 6 + 1 fork + 1 GEN trajectory + 1 GEN fork; steps: 6 + 6 + 1 (slot 0's third) + 1 (the fork's own) + 1 + 1 + 1.
    assert.equal(arms.reduce((n, a) => n + a.trajectories, 0), 9);
    assert.equal(arms.reduce((n, a) => n + a.steps, 0), 17);
    // Lines: r2 has 6 (2 failed); slot 0's third step 1; the fork 1 (its parent's failed line is not counted again);
    // the GEN branches 1 each.
    assert.equal(arms.reduce((n, a) => n + a.tool_success.lines, 0), 6 + 1 + 1 + 1 + 1);
    assert.equal(arms.reduce((n, a) => n + a.tool_success.successes, 0), 4 + 1 + 1 + 1);
  });

  test(`${store}: a fork continues as a new trajectory holding only what follows the fork`, () => {
    const { fork, branches } = run();
    const p = fork.parent.memory._gateway!;
    const c = fork.child.memory._gateway!;
    assert.notEqual(c.trajectory, p.trajectory);
    assert.deepEqual([p.step, p.n, p.s], [2, 1, 0]);
    assert.equal(c.step, 1);
    assert.equal(c.n, 1);
    assert.equal(c.s, 1);
    // The trace hash goes on from the parent's: an outcome names the whole episode.
    assert.notEqual(c.hash, p.hash);
    assert.equal(c.experiment, p.experiment);
    assert.notEqual(branches[0].memory._gateway!.trajectory, branches[1].memory._gateway!.trajectory);
    assert.deepEqual([branches[0].memory._gateway!.s, branches[1].memory._gateway!.s], [1, 0]);
  });
}


test('the two Redis replicas report identical JSON, generated_at aside', () => {
  const [a, b] = runs().redisReports.map((r) => ({ ...r, generated_at: null }));
  assert.deepEqual(a, b);
  assert.equal(runs().redisReports[0]!.store, 'redis');
});

test('the memory store and Redis count the same scenario the same', () => {
  assert.deepEqual(timeless(runs().redis.report), timeless(runs().memory.report));
});
