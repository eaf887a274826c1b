/** What the experiment tests that compare stores share. */
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { REDIS_URL } from '../state/helpers.js';

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

/**
 * One scenario run twice: on a gateway with the memory store, then across two gateways sharing Redis under
 * `prefix` (`on(k)` alternates between them). Every gateway started goes into `gateways`, for the caller to close.
 */
export async function memoryAndRedis<R>(
  config: (state: Record<string, unknown>) => Record<string, unknown>,
  scenario: (on: (k: number) => TestGateway) => Promise<R>,
  prefix: string,
  gateways: TestGateway[],
): Promise<{ memory: R; redis: R; redisReports: ExperimentsReport[] }> {
  const m = await startGateway(config({}));
  gateways.push(m);
  const memory = await scenario(() => m);
  const r = [await startGateway(config({ redis: { url: REDIS_URL, key_prefix: prefix } })), await startGateway(config({ redis: { url: REDIS_URL, key_prefix: prefix } }))];
  gateways.push(...r);
  const redis = await scenario((k) => r[k % 2] ?? m);
  const redisReports = await Promise.all(r.map(async (g) => (await (await fetch(`${g.adminUrl}/gateway/experiments`)).json()) as ExperimentsReport));
  return { memory, redis, redisReports };
}
