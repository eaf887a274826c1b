/**
 * What the seeded simulations through the real recorder share (simulation*.test.ts). A seeded simulation through the real recorder, store and report (no HTTP: the batches are planned, begun and
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
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import type { BatchResult } from '../../src/dispatch/batch.js';
import { experimentsReport } from '../../src/experiments/report/report.js';
import type { AgentInput, AgentRequest, JsonObject } from '../../src/protocol/types.js';
import { candidateTagOf, tagValue } from '../../src/protocol/memory-tag.js';
import { planBatch } from '../../src/routing/plan.js';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import type { IndexedAgentRequest } from '../../src/protocol/request/indexed-request.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import { isJsonObject } from '../../src/protocol/schemas.js';
import { withTestDefaults } from '../helpers/gateway.js';

export async function gateway(route: Record<string, unknown>): Promise<FastifyInstance> {
  const config = parseConfigText(
    JSON.stringify(
      withTestDefaults(
        {
          backends: { a: { url: 'http://127.0.0.1:9' }, b: { url: 'http://127.0.0.1:9' } },
          experiments: { earlier_max: 0 },
          routes: [{ name: 'ab', split: { a: 1, b: 1 }, ...route }],
        },
        false,
      ),
    ),
    'simulation.yaml',
    {},
  );
  return buildApp({ config, logger: false, defaultMetrics: false });
}

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
  gw.experiments.recordBatch(compiled, request, plan, result, steps, true);
  return plan.inputs.map((p) => ({ _gateway: tagValue(candidateTagOf({ backend: p.legs[0]!.backend, route: p.route, arm: p.arm, trajectory: p.trajectory })) }));
}

export function beta22(rnd: () => number): number {
  const u = [rnd(), rnd(), rnd()].sort((x, y) => x - y);
  return u[1]!;
}

export function beta52(rnd: () => number): number {
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

export async function experiment(run: number, rnd: () => number, d: Design): Promise<Outcome> {
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

