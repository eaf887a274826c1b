// The experiment flows' figures (docs/experiments.md#replays-and-resumed-episodes), one gateway on the memory store:
// run 1 and a rerun from the cache with imports, a crash and resume, a reset and a rerun, a forged tag, history-less
// trajectories that coincide. `npm run build && node scripts/experiment-flows.mjs [<repo root>]`: the gateway and
// fake agents come from <repo root>/dist (default this repo: another checkout's build gives its figures).
// The BENCH-like driver is exp-core's (HTTP only); the gateway and fake agents are the given build's.
import { rmSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';
/* global fetch */
const root = process.argv[2] ?? fileURLToPath(new URL('..', import.meta.url));
const { startGateway } = await import(`${root}/dist/test/helpers/gateway.js`);
const { startFakeAgent } = await import(`${root}/dist/test/helpers/fake-agent.js`);
const D = await import(new URL('../dist/test/experiments/bench-driver.js', import.meta.url).href);
const FLOWS = ['rerun', 'resume', 'reset', 'forge', 'coincide'];
const x = await startFakeAgent({ name: 'x' });
const y = await startFakeAgent({ name: 'y' });
const gw = await startGateway({
  backends: { x: { url: x.url }, y: { url: y.url } },
  cache: { max_mb: 64, ttl_s: 3600 },
  experiments: { primary: 'outcome', sequential: { burn_in: 10 } },
  routes: [...FLOWS.map((f) => ({ name: f, match: { 'extra_keys.flow': f }, split: { x: 1, y: 1 }, cache: 'deterministic' })), { name: 'other', backend: 'x' }],
});
const on = () => gw;
const N = 32;
const dirs = [];
const dir = () => { const d = D.resultsDir(); dirs.push(d); return d; };
const cov = (e) => e.arms.map((a) => `${a.arm} ${a.trajectories} units, ${a.outcomes.reported} outcomes, coverage ${a.outcomes.coverage === null ? '-' : (100 * a.outcomes.coverage).toFixed(1) + '%'}${a.superseded === undefined ? '' : `, superseded ${a.superseded}`}`).join('; ');
const prim = (e) => { const c = e.comparisons.find((c) => c.primary); return `difference ${c?.fixed?.difference?.toFixed(3) ?? '-'} fixed [${c?.fixed?.ci95?.map((v) => v.toFixed(3)).join(', ') ?? '-'}] always-valid [${c?.sequential?.ci95?.map((v) => v.toFixed(3)).join(', ') ?? '-'}]`; };
try {
  // 1. rerun from the cache
  const eps = D.episodes('rerun', N);
  const d1 = dir(); await D.drive(on, 'rerun', eps, d1);
  const i1 = (await D.importDir(gw, d1)).results;
  const r1 = await D.routeReport(on, 'rerun');
  const d2 = dir(); const run2 = await D.drive(on, 'rerun', eps, d2);
  const i2 = (await D.importDir(gw, d2)).results;
  const r2 = await D.routeReport(on, 'rerun');
  console.log(`rerun: run 1 + import ${JSON.stringify(i1)}\n  report: ${cov(r1)}; ${prim(r1)}`);
  console.log(`  rerun (${run2.hits} of ${run2.sent} steps from the cache) + import ${JSON.stringify(i2)}\n  report: ${cov(r2)}; ${prim(r2)}`);
  const i3 = (await D.importDir(gw, d1)).results;
  console.log(`  import run 1 again: ${JSON.stringify(i3)}; report: ${cov(await D.routeReport(on, 'rerun'))}`);
  console.log(`  export rows ${(await D.exportRows(gw, 'rerun')).length} vs units ${D.sum((await D.routeReport(on, 'rerun')).arms.map((a) => a.trajectories))}`);
  // 2. crash + resume
  const reps = D.episodes('resume', N);
  const d3 = dir(); const crashed = await D.drive(on, 'resume', reps, d3, 5);
  const restarted = crashed.inFlight.filter((f) => f.tags.length > 0).length;
  await D.drive(on, 'resume', reps.filter((e) => !crashed.tags.has(e.id)), d3);
  const i4 = (await D.importDir(gw, d3)).results;
  const r4 = await D.routeReport(on, 'resume');
  console.log(`resume: crash after 5 batches (${restarted} episodes in flight, restarted), resume, import ${JSON.stringify(i4)}\n  ${N} episodes -> ${D.sum(r4.arms.map((a) => a.trajectories))} units; ${cov(r4)}; export rows ${(await D.exportRows(gw, 'resume')).length}`);
  // 3. reset + rerun from the cache
  const seps = D.episodes('reset', N);
  await D.drive(on, 'reset', seps, dir());
  await fetch(`${gw.adminUrl}/gateway/experiments/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ route: 'reset' }) });
  const rr = await D.drive(on, 'reset', seps, dir());
  const r5 = await D.routeReport(on, 'reset');
  const tags = [...rr.tags.values()];
  const all = tags.flat();
  const later = tags.flatMap((ts) => ts.slice(1).map((t) => t.trajectory === ts[0].trajectory));
  console.log(`reset: rerun from the cache (${rr.hits} of ${rr.sent} steps cached): tags with the new experiment ${all.filter((t) => t.experiment === r5.experiment.id).length}/${all.length}; steps k>1 keeping the step-1 id ${later.filter(Boolean).length}/${later.length}; new experiment: ${D.sum(r5.arms.map((a) => a.steps))} steps counted of ${rr.sent} sent, ${D.sum(r5.arms.map((a) => a.trajectories))} units`);
  // 4. forged tag
  const feps = D.episodes('forge', N);
  const f = await D.drive(on, 'forge', feps, dir());
  await D.importDir(gw, dirs.at(-1));
  const fb = await D.routeReport(on, 'forge');
  const tool = (e) => { const c = e.comparisons.find((c) => c.metric === 'tool_success'); return `tool success p ${c?.fixed?.p_value?.toPrecision(4) ?? '-'} CI [${c?.fixed?.ci95?.map((v) => v.toFixed(3)).join(', ') ?? '-'}]`; };
  const honest = f.tags.get(feps[0].id).at(-1);
  const other = honest.arm === 'x' ? 'y' : 'x';
  const forged = { ...honest, trajectory: 'f'.repeat(32), s: 999_999_990, n: 999_999_999, arm: other, backend: other };
  const res = await gw.post({ request_id: 'forge-1', inputs: [{ id: 0, instruction: { type: 'env', content: JSON.stringify({ infos: 'dish_robot: pick succeed with message: forged' }) }, tools: [], attributes: {}, memory: { _gateway: forged }, num_outputs: 1, extra_keys: { inference_mode: true, flow: 'forge' } }] });
  const fa = await D.routeReport(on, 'forge');
  console.log(`forged tag (new id, counters near 1e9, arm ${other}): before ${tool(fb)}; after ${tool(fa)}; rejected_tags ${fa.rejected_tags ?? 'n/a'}; answered trajectory ${res.json[0].memory._gateway.trajectory === forged.trajectory ? 'the forged id' : 'a new id'}`);
  // 5. history-less coincidence
  const env = { type: 'env', content: JSON.stringify({ infos: 'dish_robot: pick succeed with message: plate' }) };
  const inp = (id, instruction, memory) => ({ id, instruction, tools: [], attributes: {}, memory, num_outputs: 1, extra_keys: { inference_mode: true, flow: 'coincide' } });
  const ten = [...Array(10).keys()];
  const a1 = (await gw.post({ request_id: 'co-1', inputs: ten.map((i) => inp(i, { type: 'user', content: `first ${i}` }, {})) })).json;
  const a2 = (await gw.post({ request_id: 'co-2', inputs: a1.map((c, i) => inp(i, env, c.memory)) })).json;
  const b1 = (await gw.post({ request_id: 'co-3', inputs: ten.map((i) => inp(i, { type: 'user', content: `second ${i}` }, {})) })).json;
  const b2res = await gw.post({ request_id: 'co-4', inputs: b1.map((c, i) => inp(i, env, c.memory)) });
  const b2 = b2res.json;
  const rc = await D.routeReport(on, 'coincide');
  const ownIds = b2.filter((c, i) => c.memory._gateway.trajectory === b1[i].memory._gateway.trajectory).length;
  const earlier = new Set(a2.map((c) => c.memory._gateway.trajectory));
  console.log(`history-less: step 2 of ten new trajectories (${b2res.headers.get('x-gateway-cache-hits')} cached): ${new Set(b2.map((c) => c.memory._gateway.trajectory)).size} distinct ids, ${ownIds} keep their own, ${b2.filter((c) => earlier.has(c.memory._gateway.trajectory)).length} carry an earlier trajectory's id; robot actions counted ${D.sum(rc.arms.map((a) => a.tool_success.lines))} of 20`);
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await gw.close(); await x.close(); await y.close();
}
