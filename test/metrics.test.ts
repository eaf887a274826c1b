/**
 * README "Metrics": label values stay bounded, and every answer says the gateway's own time.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { MAX_CODES_PER_BACKEND } from '../src/metrics.js';
import { startFakeAgent } from './helpers/fake-agent.js';
import { mkInput, startGateway } from './helpers/gateway.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

test('a backend inventing thousands of error codes cannot grow the code series past the cap', async () => {
  let n = 0;
  const agent = await startFakeAgent({
    name: 'chaos',
    behaviour: {
      candidate: () => ({
        status: 'error',
        output: null,
        error: { code: `code_${++n}`, message: 'a new code every time', component: null },
      }),
    },
  });
  const gw = await startGateway({
    probe_interval_s: 3600,
    backends: { chaos: { url: agent.url } },
    routes: [{ name: 'ab', split: { chaos: 1 } }],
  });
  cleanup.push(async () => {
    await gw.close();
    await agent.close();
  });
  for (let b = 0; b < 20; b++) {
    const res = await gw.post({ request_id: `codes-${b}`, inputs: Array.from({ length: 100 }, (_, i) => mkInput(i)) });
    assert.equal(res.status, 200);
  }
  assert.ok(n >= 2000, `the backend produced ${n} distinct codes`);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  const series = metrics.split('\n').filter((l) => l.startsWith('magma_gateway_candidate_errors_total{'));
  assert.equal(series.length, MAX_CODES_PER_BACKEND + 1, 'the first 50 codes plus "other"');
  const other = series.find((l) => l.includes('code="other"'));
  assert.match(other ?? '', / 1950$/);
  // The experiment report keeps the same bound for its per-arm error codes.
  const report = (await (await fetch(`${gw.url}/gateway/experiments`)).json()) as {
    routes: { arms: { error_codes: Record<string, number> }[] }[];
  };
  assert.ok(Object.keys(report.routes[0]!.arms[0]!.error_codes).length <= MAX_CODES_PER_BACKEND + 1);
});

test('every answer carries x-gateway-overhead-ms, not only batches', async () => {
  const agent = await startFakeAgent({ name: 'a' });
  const gw = await startGateway({ probe_interval_s: 3600, backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  cleanup.push(async () => {
    await gw.close();
    await agent.close();
  });
  for (const path of ['/health', '/v1/info', '/metrics', '/gateway/routes', '/nope']) {
    const res = await fetch(`${gw.url}${path}`);
    const v = Number(res.headers.get('x-gateway-overhead-ms'));
    assert.ok(Number.isFinite(v) && v >= 0, `${path}: ${res.headers.get('x-gateway-overhead-ms')}`);
  }
  const bad = await gw.post('{');
  assert.equal(bad.status, 422);
  assert.ok(Number.isFinite(Number(bad.headers.get('x-gateway-overhead-ms'))));
});
