/**
 * A seeded simulation through the real recorder, store and report (no HTTP: the batches are planned, begun and
 * recorded as the batch path does, so hundreds of experiments run in seconds). Each trajectory's success chance
 * from Beta(2, 2) (the median of 3 uniforms) or, for the power check, Beta(5, 2) on arm b (the 5th smallest of 6
 * uniforms); 3-6 env steps of 2 robot lines; trajectories split 50/50, in progress together. Per experiment:
 * whether the fixed 95% interval of the tool-success difference (read once, at the end) excludes 0, and whether
 * the always-valid one excludes 0 at any read (after every step). The 2,000-run version of these bars is on the
 * pure functions (test/stats).
 *
 * Bands account for Monte Carlo error: with 300 runs, a true 5.5% rate has a binomial SD of 1.3%, so the fixed
 * error rate must lie in [1.5%, 10%] (about 3 SD); the always-valid one, whose true rate is 2-3% here, at most 8%.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { BatchResult } from '../../src/dispatch/batch.js';
import { experimentsReport } from '../../src/experiments/report.js';
import type { AgentInput, AgentRequest, JsonObject } from '../../src/protocol/types.js';
import { candidateTagOf, tagValue } from '../../src/routing/memory-tag.js';
import { planBatch } from '../../src/routing/plan.js';
import { stringifyExact } from '../../src/protocol/exact-json.js';
import type { IndexedAgentRequest } from '../../src/protocol/indexed-request.js';
import { readAgentRequest } from '../../src/protocol/read-request.js';
import { seededRandom } from '../../bench/lib/seeded-random.js';
import { isJsonObject } from '../../src/protocol/schemas.js';

const RUNS = 300;
const TRAJECTORIES = 60;

let app: FastifyInstance;
/** The same split assigned by `attributes.scenario`: the key is the unit. */
let keyed: FastifyInstance;

async function gateway(route: Record<string, unknown>): Promise<FastifyInstance> {
  const config = parseConfigText(
    JSON.stringify({
      probe_interval_s: 3600,
      backends: { a: { url: 'http://127.0.0.1:9' }, b: { url: 'http://127.0.0.1:9' } },
      experiments: { earlier_max: 0 },
      routes: [{ name: 'ab', split: { a: 1, b: 1 }, ...route }],
    }),
    'simulation.yaml',
    {},
  );
  return buildApp({ config, logger: false, defaultMetrics: false });
}

before(async () => {
  app = await gateway({});
  keyed = await gateway({ assign_by: 'attributes.scenario' });
});

after(() => Promise.all([app.close(), keyed.close()]));

function input(id: number, type: 'user' | 'env', content: string, memory: JsonObject, attributes: JsonObject = {}): AgentInput {
  return { id, instruction: { type, content }, tools: [], attributes, memory, num_outputs: 1, extra_keys: {} };
}

/** The request as the batch path holds it: read from its bytes by the indexer. */
function indexed(request: AgentRequest): IndexedAgentRequest {
  const read = readAgentRequest(Buffer.from(stringifyExact(request)), { maxOutputsPerInput: 1024, maxJsonDepth: 64, memoryKey: '_gateway' });
  if (!read.ok) throw new Error('the simulated request is invalid');
  return read.request;
}

/** One batch as the batch path runs it: plan, begin (the tags), the answer's legs, record. Returns each input's next memory. */
async function step(on: FastifyInstance, requestId: string, inputs: AgentInput[]): Promise<JsonObject[]> {
  const gw = on.gateway;
  const compiled = gw.current.agents.root!.routes; // the config has top-level routes
  const request = indexed({ request_id: requestId, inputs });
  const plan = planBatch(request, compiled, { canServe: () => true }, { headers: {} });
  const steps = await gw.experiments.begin(compiled, request, plan, false);
  const legs = plan.inputs.map((p) => ({ input: p.index, backend: p.legs[0]!.backend, route: p.route, arm: p.arm, ms: 1 }));
  const result: BatchResult = { outputs: [], workMs: 0, backends: {}, errorCodes: {}, legs };
  gw.experiments.recordBatch(compiled, request, plan, result, steps);
  return plan.inputs.map((p) => ({ _gateway: tagValue(candidateTagOf(p.legs[0]!.backend, p.route, p.arm, p.trajectory)) }));
}

function beta22(rnd: () => number): number {
  const u = [rnd(), rnd(), rnd()].sort((x, y) => x - y);
  return u[1]!;
}

function beta52(rnd: () => number): number {
  const u = Array.from({ length: 6 }, () => rnd()).sort((x, y) => x - y);
  return u[4]!;
}

function feedback(rnd: () => number, p: number): string {
  const line = (robot: string): string => `${robot}: pick ${rnd() < p ? 'succeed' : 'failed'} with message: x`;
  return JSON.stringify({ infos: `${line('r1')}\n${line('r2')}` });
}

interface Outcome {
  fixedExcludes: boolean;
  /** The fixed interval holds `truth`. */
  fixedCovers: boolean;
  /** The fixed interval lies above 0 (b better). */
  fixedAbove: boolean;
  sequentialEverExcludes: boolean;
  sequentialEverAbove: boolean;
  /** The always-valid result at the last look (null only before the burn-in). */
  lastSequential: boolean;
  fixedMethod: string;
  srmUnit: string;
  srmTotal: number;
  /** Trajectories of the smaller arm. */
  fewest: number;
}

interface Design {
  /** Starts every request_id: trajectory ids come from request_id and input id, so each test needs its own. */
  name: string;
  on: FastifyInstance;
  trajectories: number;
  /** Trajectory i's success chance, given its arm (known after its first step). */
  chance: (i: number, arm: string) => number;
  /** Trajectory i's first-input attributes. */
  attributes?: (i: number) => JsonObject;
  truth?: number;
}

async function experiment(run: number, rnd: () => number, d: Design): Promise<Outcome> {
  await d.on.gateway.experiments.reset(undefined, undefined);
  const ids = Array.from({ length: d.trajectories }, (_, i) => i);
  const length = ids.map(() => 3 + Math.floor(rnd() * 4));
  let memory = await step(d.on, `${d.name}-run${run}-start`, ids.map((i) => input(i, 'user', `task ${run}/${i}`, {}, d.attributes?.(i) ?? {})));
  const arm = memory.map((m) => {
    const tag = m._gateway;
    return isJsonObject(tag) && typeof tag.arm === 'string' ? tag.arm : '';
  });
  const p = ids.map((i) => d.chance(i, arm[i] ?? ''));
  let sequentialEverExcludes = false;
  let sequentialEverAbove = false;
  let lastSequential = false;
  for (let k = 1; k <= 6; k++) {
    const live = ids.filter((i) => length[i]! >= k);
    if (live.length === 0) break;
    const next = await step(d.on, `${d.name}-run${run}-step${k}`, live.map((i) => input(i, 'env', feedback(rnd, p[i]!), memory[i]!)));
    memory = memory.map((m, i) => (live.includes(i) ? next[live.indexOf(i)]! : m));
    const r = (await experimentsReport(d.on.gateway)).experiments[0]!;
    const seq = r.comparisons.find((c) => c.primary)!.sequential;
    lastSequential = seq !== null;
    if (seq !== null && (seq.ci95[0] > 0 || seq.ci95[1] < 0)) sequentialEverExcludes = true;
    if (seq !== null && seq.ci95[0] > 0) sequentialEverAbove = true;
  }
  const r = (await experimentsReport(d.on.gateway)).experiments[0]!;
  const fixed = r.comparisons.find((c) => c.primary)!.fixed;
  assert.ok(fixed !== null, `run ${run}: no fixed result`);
  const truth = d.truth ?? 0;
  return {
    fixedExcludes: fixed.ci95[0] > 0 || fixed.ci95[1] < 0,
    fixedCovers: fixed.ci95[0] <= truth && truth <= fixed.ci95[1],
    fixedAbove: fixed.ci95[0] > 0,
    sequentialEverExcludes,
    sequentialEverAbove,
    lastSequential,
    fixedMethod: fixed.method,
    srmUnit: r.srm?.unit ?? '',
    srmTotal: Object.values(r.srm?.observed ?? {}).reduce((x, y) => x + y, 0),
    fewest: Math.min(...r.arms.map((a) => a.trajectories)),
  };
}

test(`identical arms, ${RUNS} seeded experiments: the trajectory-level intervals keep their error rates`, async (t) => {
  const rnd = seededRandom(20_261_201);
  let fixed = 0;
  let sequential = 0;
  let pastBurnIn = 0;
  for (let run = 0; run < RUNS; run++) {
    const o = await experiment(run, rnd, { name: 'null', on: app, trajectories: TRAJECTORIES, chance: () => beta22(rnd) });
    if (o.fixedExcludes) fixed++;
    if (o.sequentialEverExcludes) sequential++;
    // An arm with 20 trajectories is past the burn-in by the last look (all 60 have lines by then); the hash
    // leaves fewer in one arm in a few runs, and those must have none.
    assert.equal(o.lastSequential, o.fewest >= 20, `run ${run}: ${o.fewest} trajectories in the smaller arm, always-valid result ${o.lastSequential}`);
    if (o.lastSequential) pastBurnIn++;
  }
  assert.ok(pastBurnIn >= RUNS * 0.95, `only ${pastBurnIn} runs past the burn-in`);
  const fixedRate = fixed / RUNS;
  const seqRate = sequential / RUNS;
  t.diagnostic(`fixed interval excludes 0: ${(fixedRate * 100).toFixed(1)}%; always-valid at any look: ${(seqRate * 100).toFixed(1)}% (${RUNS} runs)`);
  assert.ok(fixedRate >= 0.015 && fixedRate <= 0.10, `fixed interval excluded 0 in ${(fixedRate * 100).toFixed(1)}% of runs`);
  assert.ok(seqRate <= 0.08, `always-valid interval excluded 0 at some look in ${(seqRate * 100).toFixed(1)}% of runs`);
});

const POWER_RUNS = 80;

test(`power: arm b from Beta(5, 2) against Beta(2, 2), 120 trajectories, ${POWER_RUNS} seeded experiments: detected in most`, async (t) => {
  const rnd = seededRandom(20_261_202);
  let fixed = 0;
  let sequential = 0;
  for (let run = 0; run < POWER_RUNS; run++) {
    const o = await experiment(run, rnd, { name: 'power', on: app, trajectories: 120, chance: (_i, arm) => (arm === 'b' ? beta52(rnd) : beta22(rnd)) });
    if (o.fixedAbove) fixed++;
    if (o.sequentialEverAbove) sequential++;
  }
  t.diagnostic(`b detected better: fixed ${fixed}/${POWER_RUNS}, always-valid at some look ${sequential}/${POWER_RUNS}`);
  // d = 5/7 - 1/2 ≈ 0.21 with an SE near 0.045: the fixed power is near 100%, the always-valid (about 3.1 SE wide,
  // read at every look) above 90%; the bars leave room for Monte Carlo error over 80 runs.
  assert.ok(fixed / POWER_RUNS >= 0.95, `fixed detected ${fixed}/${POWER_RUNS}`);
  assert.ok(sequential / POWER_RUNS >= 0.8, `always-valid detected ${sequential}/${POWER_RUNS}`);
});

const KEY_RUNS = 150;
const KEYS = 40;

test(`assign_by, ${KEY_RUNS} seeded experiments of ${KEYS} keys x 3 trajectories sharing the key's difficulty: keys as the unit keep coverage`, async (t) => {
  const rnd = seededRandom(20_261_203);
  let covers = 0;
  for (let run = 0; run < KEY_RUNS; run++) {
    // One difficulty per key, shared by its trajectories: they are correlated, and the key is the unit.
    const difficulty = Array.from({ length: KEYS }, () => beta22(rnd));
    const o = await experiment(run, rnd, {
      name: 'keys',
      on: keyed,
      trajectories: KEYS * 3,
      attributes: (i) => ({ scenario: `run${run}-s${i % KEYS}` }),
      chance: (i) => difficulty[i % KEYS]!,
    });
    if (o.fixedCovers) covers++;
    assert.equal(o.srmUnit, 'key');
    assert.equal(o.srmTotal, KEYS, `run ${run}: the SRM counts keys`);
    assert.equal(o.fixedMethod, 'delta method, key as unit, t with 38 df', `run ${run}`);
  }
  const rate = covers / KEY_RUNS;
  t.diagnostic(`key-unit fixed interval covers 0: ${(rate * 100).toFixed(1)}% (${KEY_RUNS} runs)`);
  // 150 runs at 95%: SD 1.8%; the band is about 3 SD.
  assert.ok(rate >= 0.89 && rate <= 0.995, `covered in ${(rate * 100).toFixed(1)}% of runs`);
});
