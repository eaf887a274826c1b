/**
 * Experiments across the flows a lab runs (docs/experiments.md#replays-and-resumed-episodes, #signed-tags), with a
 * BENCH-like driver (bench-driver.ts: 8 slots, one batch in flight, 3-6 step episodes, outcomes imported from
 * results directories) through a split with `cache: deterministic`, on the memory store and across two gateway
 * replicas sharing Redis (batches alternate between them):
 * - a rerun of the same seeds, answered wholly from the cache and imported, leaves the report unchanged;
 * - a crash, then a resume: outcome units equal the episodes in the results, coverage 100%, one `superseded` per
 *   restarted episode on its arm;
 * - a reset, then a rerun from the cache: every tag carries the new experiment and keeps its trajectory id; the
 *   rerun's results credit the new experiment, and the first run's, imported again, are duplicates;
 * - importing any directory twice changes nothing; the export has one row per unit;
 * - a forged tag changes no comparison and is counted; history-less trajectories that coincide keep their ids.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExperimentReport } from '../../src/experiments/report/report.js';
import type { Cand, TestGateway } from '../helpers/gateway.js';
import { drive, episodes, exportRows, figures, importDir, resultsDir, routeReport, sum, type Tag } from './bench-driver.js';
import { useMemoryAndRedis, type TwoBackends } from './helpers.js';
import { rmSync } from 'node:fs';

const FLOWS = ['rerun', 'resume', 'reset', 'forge', 'coincide'];
const EPISODES = 32;

function config(backends: TwoBackends, state: Record<string, unknown>): Record<string, unknown> {
  return {
    backends,
    ...(Object.keys(state).length > 0 ? { state } : {}),
    cache: { max_mb: 64, ttl_s: 3600 },
    // 32 episodes split at random leave an arm under 10 trajectories about 2% of the time, and then no always-valid
    // interval to compare; under 4 with a chance of 2.6e-6 (python3: scipy.stats.binom.cdf(3, 32, 0.5) * 2; under 10: 0.020).
    experiments: { primary: 'outcome', sequential: { burn_in: 4 } },
    routes: [...FLOWS.map((flow) => ({ name: flow, match: { 'extra_keys.flow': flow }, split: { x: 1, y: 1 }, cache: 'deterministic' })), { name: 'other', backend: 'x' }],
  };
}

const perArm = (e: ExperimentReport, k: (a: ExperimentReport['arms'][number]) => number): Record<string, number> => Object.fromEntries(e.arms.map((a) => [a.arm, k(a)]));

interface Figures {
  rerun: { before: unknown; after: unknown; afterReimport: unknown; hits: number; sent: number; imports: Record<string, number>[]; tagsDiffer: boolean; units: number; exportRows: number; dry: { episodes: number; matched: number } };
  resume: { episodes: number; units: number; reported: number; coverage: Record<string, number>; superseded: Record<string, number>; restarted: Record<string, number>; exportRows: number; reimport: Record<string, number>; unchanged: boolean };
  reset: {
    newExperiment: boolean; everyTagNew: boolean; idsKept: boolean; steps: number; sent: number; hits: number; units: number; imports: number[]; coverage: Record<string, number>;
    again: { hits: number; units: number; steps: number; replays: number };
  };
  forge: { unchanged: boolean; rejected: number; metric: boolean; forgedIdKept: boolean; flags: string; units: number[] };
  coincide: { ids: number; keptOwn: boolean; lines: number; units: number; hits: number };
}

async function post(gw: TestGateway, rid: string, inputs: object[]): Promise<{ cands: Cand[]; hits: number }> {
  const res = await gw.post({ request_id: rid, inputs });
  assert.equal(res.status, 200, res.text);
  return { cands: res.json as Cand[], hits: Number(res.headers.get('x-gateway-cache-hits') ?? 0) };
}

const env = (content: string): { type: 'env'; content: string } => ({ type: 'env', content: JSON.stringify({ infos: content }) });
const input = (id: number, flow: string, instruction: object, memory: Record<string, unknown>): object => ({ id, instruction, tools: [], attributes: {}, memory, num_outputs: 1, extra_keys: { inference_mode: true, flow } });

async function scenario(on: (k: number) => TestGateway): Promise<Figures> {
  const dirs: string[] = [];
  const dir = (): string => {
    const d = resultsDir();
    dirs.push(d);
    return d;
  };
  try {
    // Run 1, import; a rerun of the same seeds from the cache, import; both imported again.
    const d1 = dir();
    const eps = episodes('rerun', EPISODES);
    const run1 = await drive(on, 'rerun', eps, d1);
    const imp1 = (await importDir(on(0), d1)).results;
    const before = figures(await routeReport(on, 'rerun'));
    const d2 = dir();
    const dry = await importDir(on(1), d1, true);
    const run2 = await drive(on, 'rerun', eps, d2);
    const imp2 = (await importDir(on(1), d2)).results;
    const after = figures(await routeReport(on, 'rerun'));
    const imp3 = (await importDir(on(0), d1)).results;
    const imp4 = (await importDir(on(1), d2)).results;
    const afterReimport = figures(await routeReport(on, 'rerun'));
    const tagsDiffer = eps.every((e) => run2.tags.get(e.id)!.every((t, k) => t.trajectory !== run1.tags.get(e.id)![k]!.trajectory && t.replay === run1.tags.get(e.id)![k]!.trajectory));
    const rerunReport = await routeReport(on, 'rerun');

    // A crash after 5 batches, then BENCH --resume: the episodes not in the results run again from their start.
    const d3 = dir();
    const reps = episodes('resume', EPISODES);
    const crashed = await drive(on, 'resume', reps, d3, 5);
    const restartedTags = crashed.inFlight.filter((f) => f.tags.length > 0).map((f) => f.tags[0]!);
    const restarted: Record<string, number> = { x: 0, y: 0 };
    for (const t of restartedTags) restarted[t.arm!] = (restarted[t.arm!] ?? 0) + 1;
    await drive(on, 'resume', reps.filter((e) => !crashed.tags.has(e.id)), d3);
    await importDir(on(1), d3);
    const resumed = await routeReport(on, 'resume');
    const reimport = (await importDir(on(0), d3)).results;
    const resumedAgain = await routeReport(on, 'resume');

    // A reset, then a rerun from the cache: the new experiment counts what it is sent.
    const d4 = dir();
    const seps = episodes('reset', EPISODES);
    await drive(on, 'reset', seps, d4);
    const resetImports = [(await importDir(on(0), d4)).results];
    const old = await routeReport(on, 'reset');
    const reset = await fetch(`${on(1).adminUrl}/gateway/experiments/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ route: 'reset' }) });
    assert.equal(reset.status, 200, await reset.text());
    const d5 = dir();
    const rr = await drive(on, 'reset', seps, d5);
    // The rerun's results credit the new experiment; the first run's, imported again, are its duplicates.
    resetImports.push((await importDir(on(1), d5)).results, (await importDir(on(0), d4)).results, (await importDir(on(1), d5)).results);
    const fresh = await routeReport(on, 'reset');
    const rrTags = [...rr.tags.values()];
    // Rerun again: the new experiment's run is what it replays now, so nothing more counts.
    const again = await drive(on, 'reset', seps, dir());
    const afterAgain = await routeReport(on, 'reset');

    // A forged tag: a new id, counters near 1e9, the other arm, one robot action reported.
    const d6 = dir();
    const feps = episodes('forge', EPISODES);
    const frun = await drive(on, 'forge', feps, d6);
    await importDir(on(0), d6);
    const fBefore = await routeReport(on, 'forge');
    const honest = frun.tags.get(feps[0]!.id)!.at(-1)!;
    const other = honest.arm === 'x' ? 'y' : 'x';
    const forged: Tag = { ...honest, trajectory: 'f'.repeat(32), s: 999_999_990, n: 999_999_999, step: 999_999_999, arm: other, backend: other };
    const { sig: _sig, ...unsigned } = { ...honest, arm: other, backend: other };
    const f1 = await post(on(0), `forge-${process.pid}-1`, [
      input(0, 'forge', env('dish_robot: pick succeed with message: forged'), { seen_by: honest.arm!, _gateway: forged }),
      input(1, 'forge', env('dish_robot: pick succeed with message: unsigned'), { seen_by: honest.arm!, _gateway: unsigned }),
    ]);
    const forgedTag = f1.cands[0]!.memory._gateway as unknown as Tag;
    // The forger goes on with the tag it was given: still never counted.
    await post(on(1), `forge-${process.pid}-2`, [input(0, 'forge', env('dish_robot: pick succeed with message: again'), f1.cands[0]!.memory)]);
    const fAfter = await routeReport(on, 'forge');
    // The replica that saw the forged tags counts them in its metrics.
    const metricsText = await (await fetch(`${on(0).url}/metrics`)).text();

    // Ten history-less trajectories, then ten more whose step 2 equals the first ten's.
    const same = env('dish_robot: pick succeed with message: plate');
    const ten = Array.from({ length: 10 }, (_, i) => i);
    const a1 = await post(on(0), `co-${process.pid}-1`, ten.map((i) => input(i, 'coincide', { type: 'user', content: `first ${i}` }, {})));
    await post(on(1), `co-${process.pid}-2`, a1.cands.map((c, i) => input(i, 'coincide', same, c.memory)));
    const b1 = await post(on(0), `co-${process.pid}-3`, ten.map((i) => input(i, 'coincide', { type: 'user', content: `second ${i}` }, {})));
    const b2 = await post(on(1), `co-${process.pid}-4`, b1.cands.map((c, i) => input(i, 'coincide', same, c.memory)));
    const coincide = await routeReport(on, 'coincide');
    const ids = b2.cands.map((c) => (c.memory._gateway as unknown as Tag).trajectory);

    return {
      rerun: {
        before, after, afterReimport, hits: run2.hits, sent: run2.sent, imports: [imp1, imp2, imp3, imp4], tagsDiffer,
        units: sum(rerunReport.arms.map((a) => a.trajectories)), exportRows: (await exportRows(on(1), 'rerun')).length,
        dry: { episodes: dry.would_post?.length ?? 0, matched: (dry.would_post ?? []).filter((w) => w.trajectory !== null && w.result === 'duplicate').length },
      },
      resume: {
        episodes: EPISODES, units: sum(resumed.arms.map((a) => a.trajectories)), reported: sum(resumed.arms.map((a) => a.outcomes.reported)),
        coverage: perArm(resumed, (a) => a.outcomes.coverage ?? -1), superseded: perArm(resumed, (a) => a.superseded), restarted,
        exportRows: (await exportRows(on(0), 'resume')).length, reimport, unchanged: JSON.stringify(figures(resumed)) === JSON.stringify(figures(resumedAgain)),
      },
      reset: {
        newExperiment: fresh.experiment.id !== old.experiment.id,
        everyTagNew: rrTags.every((ts) => ts.every((t) => t.experiment === fresh.experiment.id)),
        idsKept: rrTags.every((ts) => ts.every((t) => t.trajectory === ts[0]!.trajectory)),
        steps: sum(fresh.arms.map((a) => a.steps)), sent: rr.sent, hits: rr.hits, units: sum(fresh.arms.map((a) => a.trajectories)),
        again: { hits: again.hits, units: sum(afterAgain.arms.map((a) => a.trajectories)), steps: sum(afterAgain.arms.map((a) => a.steps)), replays: sum(afterAgain.arms.map((a) => a.replays)) },
        imports: resetImports.map((r, i) => (i === 0 || i === 1 ? (r.accepted ?? 0) : (r.duplicate ?? 0))), coverage: perArm(fresh, (a) => a.outcomes.coverage ?? -1),
      },
      forge: {
        unchanged: JSON.stringify([fBefore.comparisons, figures(fBefore)]) === JSON.stringify([fAfter.comparisons, figures(fAfter)]),
        rejected: fAfter.rejected_tags, metric: /magma_gateway_experiment_rejected_tags_total\{[^}]*route="forge"[^}]*\} 1/.test(metricsText),
        forgedIdKept: forgedTag.trajectory === forged.trajectory || forgedTag.trajectory === honest.trajectory, flags: forgedTag.flags,
        units: [sum(fBefore.arms.map((a) => a.trajectories)), sum(fAfter.arms.map((a) => a.trajectories))],
      },
      coincide: {
        ids: new Set(ids).size, keptOwn: b2.cands.every((c, i) => (c.memory._gateway as unknown as Tag).trajectory === (b1.cands[i]!.memory._gateway as unknown as Tag).trajectory),
        lines: sum(coincide.arms.map((a) => a.tool_success.lines)), units: sum(coincide.arms.map((a) => a.trajectories)), hits: b2.hits,
      },
    };
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

const runs = useMemoryAndRedis(config, scenario);

for (const store of ['memory', 'redis'] as const) {
  test(`${store}: a rerun answered wholly from the cache, imported, leaves the report unchanged; imports are one to one`, () => {
    const r = runs()[store].rerun;
    assert.equal(r.hits, r.sent, 'every step of the rerun came from the cache');
    assert.ok(r.tagsDiffer, 'each rerun tag is its own trajectory\'s, a replay of the first run\'s');
    assert.deepEqual(r.after, r.before, 'units, outcomes, difference and both intervals');
    assert.deepEqual(r.afterReimport, r.before, 'importing both directories again changes nothing');
    assert.notEqual((r.before as { sequential: unknown }).sequential, null, 'the always-valid interval is there to compare');
    assert.deepEqual([r.imports[0]!.accepted, r.imports[1]!.accepted, r.imports[1]!.duplicate, r.imports[2]!.duplicate, r.imports[3]!.duplicate], [EPISODES, 0, EPISODES, EPISODES, EPISODES]);
    assert.deepEqual([r.units, r.exportRows], [EPISODES, EPISODES], 'the export has one row per unit');
    assert.deepEqual(r.dry, { episodes: EPISODES, matched: EPISODES }, 'a dry run names each episode\'s trajectory');
  });

  test(`${store}: a crash then a resume: one unit per episode, coverage 100%, one superseded per restarted episode`, () => {
    const r = runs()[store].resume;
    assert.ok(r.restarted.x! + r.restarted.y! > 0, 'episodes were in flight at the crash');
    assert.deepEqual([r.units, r.reported, r.exportRows], [r.episodes, r.episodes, r.episodes]);
    assert.deepEqual(r.coverage, { x: 1, y: 1 });
    assert.deepEqual(r.superseded, r.restarted);
    assert.equal(r.reimport.duplicate, r.episodes);
    assert.ok(r.unchanged);
  });

  test(`${store}: a reset then a rerun from the cache: the new experiment counts what it is sent, under the rerun's ids, and its results credit it`, () => {
    const r = runs()[store].reset;
    assert.deepEqual(r, {
      newExperiment: true, everyTagNew: true, idsKept: true, steps: r.sent, sent: r.sent, hits: r.sent, units: EPISODES,
      imports: [EPISODES, EPISODES, EPISODES, EPISODES], coverage: { x: 1, y: 1 },
      // A second rerun replays the first one after the reset: it adds no unit and no step.
      again: { hits: r.sent, units: EPISODES, steps: r.sent, replays: EPISODES },
    });
  });

  test(`${store}: a forged tag changes no comparison and is counted in rejected_tags`, () => {
    const r = runs()[store].forge;
    assert.ok(r.unchanged, 'the comparison and every unit as they were');
    assert.equal(r.rejected, 2, 'the forged tag and the unsigned one');
    assert.ok(r.metric);
    assert.equal(r.forgedIdKept, false, 'neither the forged id nor the honest one is continued');
    assert.match(r.flags, /r/);
    assert.equal(r.units[0], r.units[1]);
  });

  test(`${store}: ten history-less trajectories whose step 2 equals ten earlier ones keep ten ids and twenty robot actions`, () => {
    const r = runs()[store].coincide;
    assert.ok(r.hits > 0, 'step 2 was answered from the cache');
    assert.deepEqual({ ids: r.ids, keptOwn: r.keptOwn, lines: r.lines, units: r.units }, { ids: 10, keptOwn: true, lines: 20, units: 20 });
  });
}
