/**
 * What one experiment may store (docs/experiments.md#bounds-and-sizing): after experiments.max_trajectories
 * trajectories, later ones are left out (counted, in the report and a metric) and the store stops growing, on
 * the memory store and on Redis alike; on Redis the bytes a trajectory costs are measured against the docs'
 * sizing rule. Writes past the index bounds (trace-hash candidates, export rows, steps per trajectory) are counted
 * and named in the report and a metric on both stores.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput, postOk, type Cand, type TestGateway } from '../helpers/gateway.js';
import { deleteKeys, REDIS_URL, sharedRedis, uniquePrefix, waitUntilUp } from '../state/helpers.js';
import { MAX_STEPS_INDEXED } from '../../src/experiments/step-index.js';

const MAX = 500;
/** Trajectories per batch: 40 batches make the 20,000. */
const PER_BATCH = 500;
const TOTAL = 20_000;

function config(backends: Record<string, { url: string }>, state: Record<string, unknown>): Record<string, unknown> {
  return {
    state: { replay_ttl_s: 0, ...state },
    experiments: { max_trajectories: MAX },
    backends,
    routes: [{ name: 'ab', split: { x: 1, y: 1 } }],
  };
}

/** A trajectory's first input: its own task, so its trace hash is its own as in a real benchmark. */
const first = (request: string, i: number): object => mkInput(i, { instruction: { type: 'user', content: `task ${request}/${i}` } });

/** Sends `batches` batches named `<name><b>`, each of `size` new trajectories; the last batch's candidates. */
async function send(gw: TestGateway, name: string, batches: number, size = PER_BATCH): Promise<Cand[]> {
  let last: Cand[] = [];
  for (let b = 0; b < batches; b++) {
    last = await postOk(gw, `${name}${b}`, Array.from({ length: size }, (_, i) => first(`${name}${b}`, i)));
  }
  await gw.app.gateway.experiments.settled();
  await gw.app.gateway.store.counters.flush();
  return last;
}

async function report(gw: TestGateway): Promise<ExperimentsReport> {
  return (await (await fetch(`${gw.adminUrl}/gateway/experiments`)).json()) as ExperimentsReport;
}

async function leftOutMetric(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('magma_gateway_trajectories_left_out_total{'));
  return Number(line?.split(' ').pop() ?? 0);
}

/** Keys under `prefix` and their bytes (MEMORY USAGE, summed). */
/** Keys written on a timer (src/batch/pulse.ts's sharedPulse, src/experiments/report/history.ts and finals.ts), wherever the store nests them. */
const TIMED_KEYS = /pulse:|experiments:(history|finals|latest)/;

async function footprint(r: Redis, prefix: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, all] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    // What trajectories cost, not what the gateway writes on its own clock whatever the traffic (the console's
    // pulse, the report's history and latest snapshots): those may appear between two looks.
    const found = all.filter((k) => !TIMED_KEYS.test(k.slice(prefix.length)));
    const sizes = await Promise.all(found.map((k) => r.memory('USAGE', k)));
    keys += found.length;
    bytes += sizes.reduce<number>((s, v) => s + (v ?? 0), 0);
    cursor = next;
  } while (cursor !== '0');
  return { keys, bytes };
}

/** The docs' sizing rule: "about T bytes of Redis per trajectory ... and S per step after its first". */
function documentedBytes(): { trajectory: number; step: number } {
  const doc = readFileSync(new URL('../../../docs/experiments.md', import.meta.url), 'utf8');
  const t = /about ([\d,]+) bytes of Redis per trajectory/.exec(doc);
  const s = /([\d,]+) bytes per step after its first/.exec(doc);
  assert.ok(t !== null && s !== null, 'docs/experiments.md states the bytes per trajectory and per step');
  return { trajectory: Number(t[1]?.replaceAll(',', '')), step: Number(s[1]?.replaceAll(',', '')) };
}

function assertNear(measured: number, documented: number, what: string): void {
  assert.ok(Math.abs(measured - documented) <= 0.2 * documented, `measured ${measured} B per ${what}, the docs say ${documented}`);
}

function assertLeftOut(r: ExperimentsReport, leftOut: number): void {
  const e = r.experiments[0];
  assert.ok(e !== undefined);
  assert.equal(e.arms.reduce((n, a) => n + a.trajectories, 0), MAX);
  assert.ok(e.warnings.some((w) => w.startsWith(`${leftOut} trajectories started after experiments.max_trajectories (${MAX})`)), e.warnings.join('\n'));
}

const f = useFixtures();

test('memory store: trajectories past max_trajectories are left out and counted', async () => {
  const [x, y] = await Promise.all([f.agent({ name: 'x' }), f.agent({ name: 'y' })]);
  const gw = await f.gateway(config({ x: { url: x.url }, y: { url: y.url } }, {}));
  await send(gw, 'b', TOTAL / PER_BATCH);
  assertLeftOut(await report(gw), TOTAL - MAX);
  assert.equal(await leftOutMetric(gw), TOTAL - MAX);
});

test('redis: keys and bytes stop growing at max_trajectories; the docs size a trajectory within 20%', async () => {
  const prefix = uniquePrefix();
  f.defer(() => deleteKeys(prefix));
  const r = new Redis(REDIS_URL);
  f.defer(() => r.disconnect());
  const [x, y] = await Promise.all([f.agent({ name: 'x' }), f.agent({ name: 'y' })]);
  const gw = await f.gateway(config({ x: { url: x.url }, y: { url: y.url } }, { redis: sharedRedis(prefix) }));
  // Half the bound, then the other half: the difference is what a trajectory costs, without the experiment's own keys.
  await send(gw, 'first', 1, MAX / 2);
  const half = await footprint(r, prefix);
  const second = await send(gw, 'second', 1, MAX / 2);
  const full = await footprint(r, prefix);
  const perTrajectory = (full.bytes - half.bytes) / (MAX / 2);
  await send(gw, 'b', (TOTAL - MAX) / PER_BATCH);
  const after = await footprint(r, prefix);
  assert.equal(after.keys, full.keys);
  // The counters hash holds the same fields, only larger numbers: a few bytes at most.
  assert.ok(after.bytes - full.bytes < 256, `${after.bytes - full.bytes} bytes more past the bound`);
  assertLeftOut(await report(gw), TOTAL - MAX);
  assert.equal(await leftOutMetric(gw), TOTAL - MAX);
  // A second step of each recorded trajectory of the second half: what a step costs.
  await postOk(gw, 'step2', second.map((c) => mkInput(c.source_id, { instruction: { type: 'env', content: `feedback ${c.source_id}` }, memory: c.memory })));
  await gw.app.gateway.experiments.settled();
  await gw.app.gateway.store.counters.flush();
  const stepped = await footprint(r, prefix);
  const perStep = (stepped.bytes - after.bytes) / (MAX / 2);
  console.log(`redis: ${half.keys} keys ${half.bytes} B at ${MAX / 2}; ${full.keys} keys ${full.bytes} B at ${MAX}; ${after.keys} keys ${after.bytes} B at ${TOTAL}; ${Math.round(perTrajectory)} B per trajectory, ${Math.round(perStep)} B per further step`);
  const documented = documentedBytes();
  assertNear(perTrajectory, documented.trajectory, 'trajectory');
  assertNear(perStep, documented.step, 'step');
});

/** The index bounds: a small trace-hash bound and export bound, and one trajectory past the steps indexed. */
const HASH_MAX = 2;
const EXPORT_MAX = 3;
const SAME_TASK = 5;

function indexConfig(backends: Record<string, { url: string }>, state: Record<string, unknown>): Record<string, unknown> {
  return { ...config(backends, state), experiments: { hash_candidates_max: HASH_MAX, export_max_trajectories: EXPORT_MAX } };
}

/** Five trajectories of the same task (one trace hash), then one of them stepped past the steps indexed. */
async function passIndexBounds(gw: TestGateway): Promise<void> {
  const same = Array.from({ length: SAME_TASK }, (_, i) => mkInput(i, { instruction: { type: 'user', content: 'the same task' } }));
  let [c] = await postOk(gw, 'same', same);
  for (let step = 2; step <= MAX_STEPS_INDEXED + 2; step++) {
    assert.ok(c !== undefined);
    [c] = await postOk(gw, `long${step}`, [mkInput(c.source_id, { instruction: { type: 'env', content: `feedback ${step}` }, memory: c.memory })]);
  }
  await gw.app.gateway.experiments.settled();
  await gw.app.gateway.store.counters.flush();
}

async function assertIndexMetric(gw: TestGateway): Promise<void> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const value = (index: string): number => {
    const line = text.split('\n').find((l) => l.startsWith('magma_gateway_experiment_index_dropped_total{') && l.includes(`index="${index}"`));
    return Number(line?.split(' ').pop() ?? 0);
  };
  assert.deepEqual(
    { trace_hash: value('trace_hash'), export: value('export'), steps: value('steps') },
    { trace_hash: SAME_TASK - HASH_MAX, export: SAME_TASK - EXPORT_MAX, steps: 2 },
  );
}

function assertIndexWarnings(r: ExperimentsReport): void {
  const e = r.experiments[0];
  assert.ok(e !== undefined);
  const has = (start: string): boolean => e.warnings.some((w) => w.startsWith(start));
  assert.ok(has(`${SAME_TASK - HASH_MAX} steps were not indexed under their trace hash, which already held experiments.hash_candidates_max (${HASH_MAX})`), e.warnings.join('\n'));
  assert.ok(has(`${SAME_TASK - EXPORT_MAX} trajectories past experiments.export_max_trajectories (${EXPORT_MAX})`), e.warnings.join('\n'));
  assert.ok(has(`2 steps past the ${MAX_STEPS_INDEXED} steps indexed per trajectory were not indexed`), e.warnings.join('\n'));
}

test('memory store: index writes past the trace-hash, export and steps bounds are counted and named in the report and a metric', async () => {
  const [x, y] = await Promise.all([f.agent({ name: 'x' }), f.agent({ name: 'y' })]);
  const gw = await f.gateway(indexConfig({ x: { url: x.url }, y: { url: y.url } }, {}));
  await passIndexBounds(gw);
  assertIndexWarnings(await report(gw));
  await assertIndexMetric(gw);
});

test('redis: index writes past the trace-hash, export and steps bounds are counted and named in the report and a metric', async () => {
  const prefix = uniquePrefix();
  f.defer(() => deleteKeys(prefix));
  const [x, y] = await Promise.all([f.agent({ name: 'x' }), f.agent({ name: 'y' })]);
  const gw = await f.gateway(indexConfig({ x: { url: x.url }, y: { url: y.url } }, { redis: sharedRedis(prefix) }));
  assert.ok(await waitUntilUp(gw.app.gateway.store, 5000), 'the gateway reached Redis');
  const fallbacks = gw.app.gateway.store.stats().fallbacks;
  await passIndexBounds(gw);
  assert.equal(gw.app.gateway.store.stats().fallbacks, fallbacks, 'every index write reached Redis');
  assertIndexWarnings(await report(gw));
  await assertIndexMetric(gw);
});
