/**
 * A batch's events become the gateway's Prometheus series in one place (docs/operations.md#metrics): each event moves
 * exactly the series it names, and a backend's own error codes are capped like every candidate error code.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MetricsBatchObserver } from '../../src/dispatch/batch-observer.js';
import { GatewayMetrics, MAX_CODES_PER_BACKEND } from '../../src/metrics.js';

async function value(m: GatewayMetrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = m.registry.getSingleMetric(name);
  assert.ok(metric, name);
  const data = await metric.get();
  const hit = data.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
  return hit?.value ?? 0;
}

test('each batch event moves its own series, labelled with the batch\'s agent', async () => {
  const m = new GatewayMetrics({ defaultMetrics: false });
  const o = new MetricsBatchObserver(m, 'kitchen');
  o.legRouted('r', 'a');
  o.candidatesFilled('r', 'a', 'completed', 3);
  o.candidatesFilled('r', 'a', 'error', 2);
  o.gatewayErrors('a', 'gateway_backend_timeout', 2);
  o.fallback('r', 'a', 'b');
  o.replicaRetry('a');
  o.budgetExhausted('b');
  o.attemptEnded('a', 'ok', 1500);
  o.attemptEnded('a', 'gateway_overloaded');
  assert.equal(await value(m, 'magma_gateway_inputs_total', { agent: 'kitchen', route: 'r', backend: 'a' }), 1);
  assert.equal(await value(m, 'magma_gateway_candidates_total', { agent: 'kitchen', route: 'r', backend: 'a', status: 'completed' }), 3);
  assert.equal(await value(m, 'magma_gateway_candidates_total', { agent: 'kitchen', route: 'r', backend: 'a', status: 'error' }), 2);
  assert.equal(await value(m, 'magma_gateway_candidate_errors_total', { agent: 'kitchen', backend: 'a', code: 'gateway_backend_timeout' }), 2);
  assert.equal(await value(m, 'magma_gateway_fallbacks_total', { agent: 'kitchen', route: 'r', from: 'a', to: 'b' }), 1);
  assert.equal(await value(m, 'magma_gateway_retries_total', { backend: 'a' }), 1);
  assert.equal(await value(m, 'magma_gateway_retry_budget_exhausted_total', { backend: 'b' }), 1);
  assert.equal(await value(m, 'magma_gateway_backend_requests_total', { backend: 'a', outcome: 'ok' }), 1);
  assert.equal(await value(m, 'magma_gateway_backend_requests_total', { backend: 'a', outcome: 'gateway_overloaded' }), 1);
  // Only the sub-request that reached the wire has a duration.
  const hist = (await m.registry.getSingleMetricAsString('magma_gateway_backend_request_duration_seconds')).split('\n');
  assert.ok(hist.includes('magma_gateway_backend_request_duration_seconds_count{backend="a"} 1'), hist.join('\n'));
  assert.ok(hist.includes('magma_gateway_backend_request_duration_seconds_sum{backend="a"} 1.5'), hist.join('\n'));
});

test('a backend inventing error codes is capped; the gateway\'s own codes are counted as they are', async () => {
  const m = new GatewayMetrics({ defaultMetrics: false });
  const o = new MetricsBatchObserver(m, 'kitchen');
  for (let i = 0; i < MAX_CODES_PER_BACKEND + 5; i++) o.backendError('a', `code_${i}`);
  const data = await m.registry.getSingleMetric('magma_gateway_candidate_errors_total')!.get();
  const codes = new Set(data.values.filter((v) => v.labels.backend === 'a').map((v) => v.labels.code));
  assert.equal(codes.size, MAX_CODES_PER_BACKEND + 1, 'the first codes, then one overflow label');
  assert.ok(codes.has('code_0'));
  assert.ok(codes.has('other'));
  assert.equal(await value(m, 'magma_gateway_candidate_errors_total', { agent: 'kitchen', backend: 'a', code: 'other' }), 5);
  o.gatewayErrors('a', 'gateway_overloaded', 2);
  assert.equal(await value(m, 'magma_gateway_candidate_errors_total', { agent: 'kitchen', backend: 'a', code: 'gateway_overloaded' }), 2);
  assert.equal(codes.has(`code_${MAX_CODES_PER_BACKEND + 4}`), false);
});
