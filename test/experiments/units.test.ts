/**
 * Strata and assign_by through real gateways (docs/experiments.md#strata, #assigning-by-a-key): a split assigned
 * by `attributes.scenario`, stratified by `attributes.suite` with two slots, scored outcomes as the primary. The
 * same scenario with the memory store and with Redis across two replicas (each step to either): the replicas
 * report identical JSON, and the numbers are the memory store's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { http } from '../helpers/config-file.js';
import { mkInput, postOk, type Cand, type TestGateway } from '../helpers/gateway.js';
import { timeless, useMemoryAndRedis, type TwoBackends } from './helpers.js';

const OK = JSON.stringify({ infos: 'dish_robot: pick succeed with message: ok' });
const BAD = JSON.stringify({ infos: 'dish_robot: pick failed with message: no' });
const SUITES = ['easy', 'hard', 'mid'];
const N = 24;

function config(backends: TwoBackends, state: Record<string, unknown>): Record<string, unknown> {
  return {
    state,
    backends,
    experiments: { stratify_by: 'attributes.suite', max_strata: 2, primary: 'outcome' },
    routes: [{ name: 'ab', split: { x: 1, y: 1 }, assign_by: 'attributes.scenario' }],
  };
}

/** Trajectory i: scenario s<i % 8> (the last one has none), suite easy, hard, then mid for the rest. */
const first = (i: number): object =>
  mkInput(i, { attributes: i === N - 1 ? { suite: 'mid' } : { scenario: `s${i % 8}`, suite: SUITES[Math.min(i, 2)] } });

interface Run {
  report: ExperimentsReport;
  mixed: ExperimentsReport;
  starts: Cand[];
  later: Cand;
}

async function scenario(on: (k: number) => TestGateway): Promise<Run> {
  // One at a time first, so easy and hard take slots 1 and 2 in that order.
  const starts = [...(await postOk(on(0), 'r0', [first(0)])), ...(await postOk(on(1), 'r1', [first(1)]))];
  starts.push(...(await postOk(on(2), 'r2', Array.from({ length: N - 2 }, (_, k) => first(k + 2)))));
  const second = await postOk(on(3), 'r3', starts.map((c, i) => mkInput(i, { instruction: { type: 'env', content: i % 3 === 0 ? BAD : OK }, memory: c.memory })));
  // A later step whose attributes changed: the stratum and the key stay those of the first step.
  const [later] = await postOk(on(4), 'r4', [mkInput(0, { instruction: { type: 'env', content: OK }, memory: second[0]?.memory ?? {}, attributes: { scenario: 's5', suite: 'mid' } })]);
  for (const g of new Set([on(0), on(1)])) await g.app.gateway.store.counters.flush();
  // Every trajectory but the keyless last one is scored.
  const outcomes = starts.slice(0, N - 1).map((c, i) => ({ trajectory: c.memory._gateway?.trajectory, score: (i % 5) / 4 }));
  const posted = await http(`${on(5).adminUrl}/gateway/experiments/outcomes`, { method: 'POST', body: { outcomes } });
  assert.equal(posted.status, 200, posted.text);
  for (const g of new Set([on(0), on(1)])) await g.app.gateway.store.counters.flush();
  const report = (await (await fetch(`${on(0).adminUrl}/gateway/experiments`)).json()) as ExperimentsReport;
  // A success outcome on top of the scores: the outcome comparison is refused, and says why.
  const more = await http(`${on(6).adminUrl}/gateway/experiments/outcomes`, { method: 'POST', body: { outcomes: [{ trajectory: starts[N - 1]?.memory._gateway?.trajectory, success: true }] } });
  assert.equal(more.status, 200, more.text);
  for (const g of new Set([on(0), on(1)])) await g.app.gateway.store.counters.flush();
  const mixed = (await (await fetch(`${on(1).adminUrl}/gateway/experiments`)).json()) as ExperimentsReport;
  if (later === undefined) throw new Error('one input, one candidate');
  return { report, mixed, starts, later };
}

const runs = useMemoryAndRedis(config, scenario);

for (const [store, run] of [['memory', () => runs().memory], ['redis, two replicas', () => runs().redis]] as const) {
  test(`${store}: a trajectory's stratum and key are its first step's, carried in the tag`, () => {
    const { starts, later } = run();
    const tags = starts.map((c) => c.memory._gateway);
    assert.deepEqual(tags.slice(0, 3).map((t) => t?.stratum), [1, 2, 0]);
    assert.ok(tags.slice(3).every((t) => t?.stratum === 0));
    // Trajectories of one scenario share a key and an arm.
    const byScenario = new Map<number, Set<string>>();
    tags.slice(0, N - 1).forEach((t, i) => byScenario.set(i % 8, (byScenario.get(i % 8) ?? new Set()).add(`${t?.key}/${t?.arm}`)));
    for (const [k, v] of byScenario) assert.equal(v.size, 1, `scenario s${k}: ${[...v].join(', ')}`);
    assert.equal(new Set(tags.slice(0, N - 1).map((t) => t?.key)).size, 8);
    // The keyless one is a unit by itself, under a key no scenario has.
    assert.match(tags[N - 1]?.key ?? '', /^[0-9a-f]{16}$/);
    assert.equal(later.memory._gateway?.stratum, 1);
    assert.equal(later.memory._gateway?.key, tags[0]?.key);
  });

  test(`${store}: the key is the unit: the SRM counts keys, comparisons read the scores per key`, () => {
    const { report, starts } = run();
    const e = report.experiments[0];
    assert.ok(e !== undefined);
    assert.equal(e.unit, 'key');
    assert.equal(e.assign_by, 'attributes.scenario');
    const keysPerArm: Record<string, number> = { x: 0, y: 0 };
    const seen = new Set<string>();
    for (const c of starts) {
      const t = c.memory._gateway;
      if (t?.key !== undefined && t.arm !== undefined && !seen.has(t.key)) {
        seen.add(t.key);
        keysPerArm[t.arm] = (keysPerArm[t.arm] ?? 0) + 1;
      }
    }
    assert.deepEqual(e.srm?.observed, keysPerArm);
    assert.equal(e.srm?.unit, 'key');
    assert.equal(e.arms.reduce((n, a) => n + a.trajectories, 0), N);
    const primary = e.comparisons.find((c) => c.primary);
    assert.equal(primary?.metric, 'outcome');
    assert.equal(primary?.outcome_kind, 'score');
    assert.equal(primary?.label, 'episode score (mean per unit)');
    // The hash puts 4 + 1 keys on x and 4 on y (deterministic: the salt is the route's name, arms and weights).
    assert.deepEqual(keysPerArm, { x: 5, y: 4 });
    // The 8 scored keys (the keyless trajectory has no score): t with 8 - 2 df.
    assert.equal(primary?.fixed?.method, 'delta method, key as unit, t with 6 df');
    assert.equal(primary?.fixed?.df, 6);
    assert.equal(primary?.sequential, null);
    // The burn-in counts keys with a score, the units of the score comparison.
    assert.equal(primary?.sequential_reason, 'needs 20 keys with a score per arm');
    assert.ok(e.warnings.some((w) => w.startsWith('few keys (') && w.includes('t with K - 2 df')), e.warnings.join('\n'));
    assert.ok(e.warnings.some((w) => w.startsWith('1 trajectories had no value at the assign_by path')), e.warnings.join('\n'));
  });

  test(`${store}: strata: the first two suites have slots, the rest is other; descriptive, with the post-stratified line`, () => {
    const s = run().report.experiments[0]?.strata;
    assert.ok(s !== null && s !== undefined);
    assert.equal(s.by, 'attributes.suite');
    assert.equal(s.max, 2);
    assert.deepEqual(s.values.map((v) => [v.slot, v.value, v.arms.reduce((n, a) => n + a.trajectories, 0)]), [[1, 'easy', 1], [2, 'hard', 1], [0, 'other', N - 2]]);
    for (const v of s.values) for (const c of v.comparisons) {
      assert.equal(c.sequential, null);
      assert.match(c.label, /descriptive: no stopping rule/);
    }
    assert.equal(s.post_stratified.length, 1);
    const ps = s.post_stratified[0];
    assert.ok(ps !== undefined && (ps.fixed !== null || ps.reason !== null));
  });

  test(`${store}: success and score outcomes on one experiment: the outcome comparison is refused, and says so`, () => {
    const e = run().mixed.experiments[0];
    const primary = e?.comparisons.find((c) => c.primary);
    assert.equal(primary?.fixed, null);
    assert.equal(primary?.outcome_kind, null);
    assert.match(primary?.fixed_reason ?? '', /^both success and score outcomes were posted/);
    assert.ok(e?.warnings.some((w) => w.startsWith('both success and score outcomes')));
  });
}


test('the two Redis replicas report identical JSON, and the memory store the same numbers', () => {
  const [a, b] = runs().redisReports.map((r) => ({ ...r, generated_at: null }));
  assert.deepEqual(a, b);
  assert.deepEqual(timeless(runs().redis.report), timeless(runs().memory.report));
});
