/**
 * DESIGN.md §7 / issue 4: label values stay bounded, and every answer says the gateway's own time.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { GATEWAY_ERROR_CODES } from '../src/errors.js';
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
  const all = metrics.split('\n').filter((l) => l.startsWith('magma_gateway_candidate_errors_total{'));
  // The gateway's own codes exist from the start (at 0 here) and are not the backend's to spend.
  const own = all.filter((l) => l.includes('code="gateway_'));
  assert.deepEqual(own.map((l) => /code="([^"]+)"/.exec(l)![1]).sort(), [...GATEWAY_ERROR_CODES].sort());
  assert.ok(own.every((l) => l.endsWith(' 0')));
  const series = all.filter((l) => !l.includes('code="gateway_'));
  assert.equal(series.length, MAX_CODES_PER_BACKEND + 1, 'the first 50 codes plus "other"');
  const other = series.find((l) => l.includes('code="other"'));
  assert.match(other ?? '', / 1950$/);
  // The experiment report keeps the same bound for its per-arm error codes.
  const report = (await (await fetch(`${gw.adminUrl}/gateway/experiments`)).json()) as {
    routes: { arms: { error_codes: Record<string, number> }[] }[];
  };
  assert.ok(Object.keys(report.routes[0]!.arms[0]!.error_codes).length <= MAX_CODES_PER_BACKEND + 1);
});

test('x-gateway-overhead-ms is on batch answers only, not on /health, /metrics, admin paths or 404s', async () => {
  const agent = await startFakeAgent({ name: 'a' });
  const gw = await startGateway({ probe_interval_s: 3600, backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  cleanup.push(async () => {
    await gw.close();
    await agent.close();
  });
  for (const url of ['/health', '/v1/info', '/metrics', '/nope', '/v1/responses'].map((p) => gw.url + p).concat(`${gw.adminUrl}/gateway/routes`)) {
    const res = await fetch(url);
    assert.ok(res.status === 200 || res.status === 404 || res.status === 405, `${url}: ${res.status}`);
    assert.equal(res.headers.get('x-gateway-overhead-ms'), null, url);
  }
  const ok = await gw.post({ request_id: 'r', inputs: [mkInput(1)] });
  assert.equal(ok.status, 200);
  assert.ok(Number.isFinite(Number(ok.headers.get('x-gateway-overhead-ms'))));
  const bad = await gw.post('{');
  assert.equal(bad.status, 422);
  assert.ok(Number.isFinite(Number(bad.headers.get('x-gateway-overhead-ms'))));
  // The fastify path of the same endpoint (what the raw front leaves to it: a query string) does the same.
  const viaFastify = await fetch(`${gw.url}/v1/responses?x=1`, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } });
  assert.equal(viaFastify.status, 422);
  assert.ok(Number.isFinite(Number(viaFastify.headers.get('x-gateway-overhead-ms'))));
});
