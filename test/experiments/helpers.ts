/** What the experiment tests that compare stores share. */
import { before } from 'node:test';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { useFixtures } from '../helpers/fixtures.js';
import type { TestGateway } from '../helpers/gateway.js';
import { deleteKeys, sharedRedis, uniquePrefix } from '../state/helpers.js';
import { holdWhenAsked } from './bench-driver.js';

/** The report without what differs between runs of one scenario: times. */
export function timeless(r: ExperimentsReport): unknown {
  return {
    ...r,
    generated_at: null,
    store: null,
    experiments: r.experiments.map((e) => ({
      ...e,
      experiment: { ...e.experiment, started_at: null },
      arms: e.arms.map((a) => ({ ...a, latency_ms: null, crossover: { ...a.crossover, since: null } })),
    })),
  };
}

/** The `backends` block of a store comparison's config: the two fake agents it splits between. */
export interface TwoBackends {
  x: { url: string };
  y: { url: string };
}

export interface StoreRuns<R> {
  memory: R;
  redis: R;
  /** The report of each Redis replica once the scenario ran. */
  redisReports: ExperimentsReport[];
}

/**
 * One scenario run twice, before the file's tests: on a gateway with the memory store, then across two gateways
 * sharing Redis under a fresh key prefix (`on(k)` alternates between them). Both call the same two fake agents;
 * `config(backends, state)` is each gateway's config. Gateways, agents and the Redis keys go after the file's
 * tests (useFixtures). Returns the runs, to read in the tests.
 */
export function useMemoryAndRedis<R>(
  config: (backends: TwoBackends, state: Record<string, unknown>) => Record<string, unknown>,
  scenario: (on: (k: number) => TestGateway) => Promise<R>,
): () => StoreRuns<R> {
  const f = useFixtures();
  let runs: StoreRuns<R> | undefined;
  before(async () => {
    const prefix = uniquePrefix();
    f.defer(() => deleteKeys(prefix));
    const [x, y] = await Promise.all([f.agent({ name: 'x', behaviour: holdWhenAsked }), f.agent({ name: 'y', behaviour: holdWhenAsked })]);
    const backends = { x: { url: x.url }, y: { url: y.url } };
    const m = await f.gateway(config(backends, {}));
    const memory = await scenario(() => m);
    const shared = { redis: sharedRedis(prefix) };
    const r = [await f.gateway(config(backends, shared)), await f.gateway(config(backends, shared))];
    const redis = await scenario((k) => r[k % 2] ?? m);
    const redisReports = await Promise.all(r.map(async (g) => (await (await fetch(`${g.adminUrl}/gateway/experiments`)).json()) as ExperimentsReport));
    runs = { memory, redis, redisReports };
  });
  return () => {
    if (runs === undefined) throw new Error('the store runs are read in a test, after before()');
    return runs;
  };
}
