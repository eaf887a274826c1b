/**
 * A seeded simulation through the real recorder, store and report (no HTTP: the batches are planned, begun and
 * recorded as the batch path does, so hundreds of experiments run in seconds). Identical arms; each trajectory's
 * success chance from Beta(2, 2) (the median of 3 uniforms), 3-6 env steps of 2 robot lines, 60 trajectories
 * split 50/50, in progress together. Per experiment: whether the fixed 95% interval of the tool-success
 * difference (read once, at the end) excludes 0, and whether the always-valid one excludes 0 at any read (after
 * every step). The 2,000-run version of these bars is on the pure functions (test/stats).
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

const RUNS = 300;
const TRAJECTORIES = 60;

let app: FastifyInstance;

before(async () => {
  const config = parseConfigText(
    JSON.stringify({
      probe_interval_s: 3600,
      backends: { a: { url: 'http://127.0.0.1:9' }, b: { url: 'http://127.0.0.1:9' } },
      experiments: { earlier_max: 0 },
      routes: [{ name: 'ab', split: { a: 1, b: 1 } }],
    }),
    'simulation.yaml',
    {},
  );
  app = await buildApp({ config, logger: false, defaultMetrics: false });
});

after(() => app.close());

function input(id: number, type: 'user' | 'env', content: string, memory: JsonObject): AgentInput {
  return { id, instruction: { type, content }, tools: [], attributes: {}, memory, num_outputs: 1, extra_keys: {} };
}

/** The request as the batch path holds it: read from its bytes by the indexer. */
function indexed(request: AgentRequest): IndexedAgentRequest {
  const read = readAgentRequest(Buffer.from(stringifyExact(request)), { maxOutputsPerInput: 1024, maxJsonDepth: 64, memoryKey: '_gateway' });
  if (!read.ok) throw new Error('the simulated request is invalid');
  return read.request;
}

/** One batch as the batch path runs it: plan, begin (the tags), the answer's legs, record. Returns each input's next memory. */
async function step(requestId: string, inputs: AgentInput[]): Promise<JsonObject[]> {
  const gw = app.gateway;
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

function feedback(rnd: () => number, p: number): string {
  const line = (robot: string): string => `${robot}: pick ${rnd() < p ? 'succeed' : 'failed'} with message: x`;
  return JSON.stringify({ infos: `${line('r1')}\n${line('r2')}` });
}

interface Outcome {
  fixedExcludes: boolean;
  sequentialEverExcludes: boolean;
  looks: number;
}

async function experiment(run: number, rnd: () => number): Promise<Outcome> {
  await app.gateway.experiments.reset(undefined, undefined);
  const p = Array.from({ length: TRAJECTORIES }, () => beta22(rnd));
  const length = Array.from({ length: TRAJECTORIES }, () => 3 + Math.floor(rnd() * 4));
  let memory = await step(`run${run}-start`, p.map((_, i) => input(i, 'user', `task ${run}/${i}`, {})));
  let sequentialEverExcludes = false;
  let looks = 0;
  for (let k = 1; k <= 6; k++) {
    const live = p.map((_, i) => i).filter((i) => length[i]! >= k);
    if (live.length === 0) break;
    const next = await step(`run${run}-step${k}`, live.map((i) => input(i, 'env', feedback(rnd, p[i]!), memory[i]!)));
    memory = memory.map((m, i) => (live.includes(i) ? next[live.indexOf(i)]! : m));
    const r = (await experimentsReport(app.gateway)).experiments[0]!;
    const seq = r.comparisons.find((c) => c.primary)!.sequential;
    looks++;
    if (seq !== null && (seq.ci95[0] > 0 || seq.ci95[1] < 0)) sequentialEverExcludes = true;
  }
  const fixed = (await experimentsReport(app.gateway)).experiments[0]!.comparisons.find((c) => c.primary)!.fixed;
  assert.ok(fixed !== null, `run ${run}: no fixed result`);
  return { fixedExcludes: fixed.ci95[0] > 0 || fixed.ci95[1] < 0, sequentialEverExcludes, looks };
}

test(`identical arms, ${RUNS} seeded experiments: the trajectory-level intervals keep their error rates`, async (t) => {
  const rnd = seededRandom(20_261_201);
  let fixed = 0;
  let sequential = 0;
  for (let run = 0; run < RUNS; run++) {
    const o = await experiment(run, rnd);
    if (o.fixedExcludes) fixed++;
    if (o.sequentialEverExcludes) sequential++;
  }
  const fixedRate = fixed / RUNS;
  const seqRate = sequential / RUNS;
  t.diagnostic(`fixed interval excludes 0: ${(fixedRate * 100).toFixed(1)}%; always-valid at any look: ${(seqRate * 100).toFixed(1)}% (${RUNS} runs)`);
  assert.ok(fixedRate >= 0.015 && fixedRate <= 0.10, `fixed interval excluded 0 in ${(fixedRate * 100).toFixed(1)}% of runs`);
  assert.ok(seqRate <= 0.08, `always-valid interval excluded 0 at some look in ${(seqRate * 100).toFixed(1)}% of runs`);
});
