/**
 * The metrics (docs/operations.md#metrics): label values stay bounded, only batch answers say the gateway's own time, the
 * HTTP series say `endpoint`, latency buckets start at 1 ms, config-fixed series exist at 0, the store's health
 * and the build are exported.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { PACKAGE_VERSION } from '../src/app.js';
import { parseConfigText } from '../src/config/load.js';
import { DEFAULT_LATENCY_BUCKETS_S } from '../src/config/schema.js';
import { GATEWAY_ERROR_CODES } from '../src/errors.js';
import { GatewayMetrics, MAX_CODES_PER_BACKEND } from '../src/metrics.js';
import { waitFor } from './helpers/wait.js';
import { useFixtures } from './helpers/fixtures.js';
import { mkInput } from './helpers/gateway.js';

test('a backend inventing thousands of error codes cannot grow the code series past the cap', async (t) => {
  const f = useFixtures(t);
  let n = 0;
  const agent = await f.agent({
    name: 'chaos',
    behaviour: {
      candidate: () => ({
        status: 'error',
        output: null,
        error: { code: `code_${++n}`, message: 'a new code every time', component: null },
      }),
    },
  });
  const gw = await f.gateway({
    backends: { chaos: { url: agent.url } },
    routes: [{ name: 'ab', split: { chaos: 1 } }],
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
    experiments: { arms: { error_codes: Record<string, number> }[] }[];
  };
  assert.ok(Object.keys(report.experiments[0]!.arms[0]!.error_codes).length <= MAX_CODES_PER_BACKEND + 1);
});

test('x-gateway-overhead-ms is on batch answers only, not on /health, /metrics, admin paths or 404s', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'a' });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
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

/** `name{labels} value` of the /metrics text, as written there; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const row = text.split('\n').find((l) => l.startsWith(series + ' '));
  return row === undefined ? undefined : Number(row.slice(series.length + 1));
}

test('the HTTP series label the URL path `endpoint` (renamed from `route`), on both listeners', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'e' });
  const gw = await f.gateway({ backends: { e: { url: agent.url } }, routes: [{ name: 'd', backend: 'e' }] });
  await fetch(`${gw.url}/health`);
  await fetch(`${gw.adminUrl}/gateway/backends`);
  assert.equal((await gw.post({ request_id: 'e1', inputs: [mkInput(1)] })).status, 200);
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.equal(sample(text, 'magma_gateway_http_requests_total{endpoint="/health",status_code="200",client="anonymous"}'), 1);
  assert.equal(sample(text, 'magma_gateway_http_requests_total{endpoint="/gateway/backends",status_code="200",client="anonymous"}'), 1);
  assert.equal(sample(text, 'magma_gateway_http_requests_total{endpoint="/v1/responses",status_code="200",client="anonymous"}'), 1);
  assert.equal(sample(text, 'magma_gateway_http_request_duration_seconds_count{endpoint="/v1/responses",client="anonymous"}'), 1);
  const http = text.split('\n').filter((l) => l.startsWith('magma_gateway_http_'));
  assert.ok(http.length > 0 && http.every((l) => !l.includes('route=')), 'no HTTP series has a route label');
  // `route` is the routing rule wherever it appears.
  assert.equal(sample(text, 'magma_gateway_inputs_total{agent="default",route="d",backend="e"}'), 1);
});

test('latency buckets start at 1 ms by default: a 5 ms batch is counted at le="0.005", not only at 10 ms', async () => {
  const m = new GatewayMetrics({ defaultMetrics: false });
  m.httpDuration.observe({ endpoint: '/v1/responses', client: 'anonymous' }, 0.005);
  m.backendDuration.observe({ backend: 'x' }, 0.0015);
  const text = await m.registry.metrics();
  const bucket = (name: string, labels: string, le: string): number | undefined => sample(text, `${name}_bucket{le="${le}",${labels}}`);
  const http = 'magma_gateway_http_request_duration_seconds';
  assert.equal(bucket(http, 'endpoint="/v1/responses",client="anonymous"', '0.001'), 0);
  assert.equal(bucket(http, 'endpoint="/v1/responses",client="anonymous"', '0.0025'), 0);
  assert.equal(bucket(http, 'endpoint="/v1/responses",client="anonymous"', '0.005'), 1);
  assert.equal(bucket('magma_gateway_backend_request_duration_seconds', 'backend="x"', '0.0025'), 1);
  assert.deepEqual(DEFAULT_LATENCY_BUCKETS_S.slice(0, 3), [0.001, 0.0025, 0.005]);
  assert.equal(DEFAULT_LATENCY_BUCKETS_S.at(-1), 600);
});

test('metrics.latency_buckets_s sets the buckets of every duration histogram; a bad list is refused naming the key', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'b' });
  const gw = await f.gateway({
    metrics: { latency_buckets_s: [0.002, 0.2, 20] },
    backends: { b: { url: agent.url } },
    routes: [{ name: 'd', backend: 'b' }],
  });
  assert.equal((await gw.post({ request_id: 'b1', inputs: [mkInput(1)] })).status, 200);
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  for (const [name, labels] of [
    ['magma_gateway_http_request_duration_seconds', 'endpoint="/v1/responses"'],
    ['magma_gateway_backend_request_duration_seconds', 'backend="b"'],
  ] as const) {
    const les = text
      .split('\n')
      .filter((l) => l.startsWith(`${name}_bucket{`) && l.includes(labels))
      .map((l) => /le="([^"]+)"/.exec(l)![1]);
    assert.deepEqual(les, ['0.002', '0.2', '20', '+Inf'], name);
  }
  const base = { backends: { b: { url: agent.url } }, routes: [{ name: 'd', backend: 'b' }] };
  for (const bad of [[0.1, 0.01], [], [0, 1], [0.1, 0.1]]) {
    assert.throws(() => parseConfigText(stringify({ ...base, metrics: { latency_buckets_s: bad } }), 'g.yaml', {}), /metrics\.latency_buckets_s/);
  }
});

test('every series whose labels the config fixes exists at 0 before anything happened', async (t) => {
  const f = useFixtures(t);
  const [a, b, s] = await Promise.all([f.agent({ name: 'a' }), f.agent({ name: 'b' }), f.agent({ name: 's' })]);
  const gw = await f.gateway({
    backends: { a: { urls: [a.url, a.url] }, b: { url: b.url }, s: { url: s.url } },
    routes: [
      { name: 'ab', match: { 'extra_keys.ab': true }, split: { a: 1, b: 1 }, fallback: ['a', 'b'] },
      { name: 'main', backend: 'a', fallback: ['b'], shadow: ['s'] },
    ],
  });
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const zero = (series: string): void => assert.equal(sample(text, series), 0, series);
  for (const backend of ['a', 'b', 's']) {
    for (const outcome of ['ok', 'cancelled', 'gateway_backend_timeout', 'gateway_backend_unreachable', 'gateway_overloaded']) {
      zero(`magma_gateway_backend_requests_total{backend="${backend}",outcome="${outcome}"}`);
    }
    zero(`magma_gateway_backend_in_flight{backend="${backend}"}`);
    zero(`magma_gateway_retries_total{backend="${backend}"}`);
    zero(`magma_gateway_retry_budget_exhausted_total{backend="${backend}"}`);
    zero(`magma_gateway_backend_request_duration_seconds_count{backend="${backend}"}`);
  }
  for (const replica of ['a#0', 'a#1']) {
    zero(`magma_gateway_backend_ejections_total{backend="a",replica="${replica}"}`);
    zero(`magma_gateway_probe_failures_total{backend="a",replica="${replica}"}`);
  }
  for (const [route, backend] of [['ab', 'a'], ['ab', 'b'], ['main', 'a'], ['main', 'b']]) {
    zero(`magma_gateway_inputs_total{agent="default",route="${route}",backend="${backend}"}`);
    for (const status of ['completed', 'error']) zero(`magma_gateway_candidates_total{agent="default",route="${route}",backend="${backend}",status="${status}"}`);
    zero(`magma_gateway_execution_feedback_total{agent="default",route="${route}",backend="${backend}",outcome="tool_succeeded"}`);
    for (const code of GATEWAY_ERROR_CODES) zero(`magma_gateway_candidate_errors_total{agent="default",backend="${backend}",code="${code}"}`);
  }
  // Fallback pairs as a failure walks the list (a leg's own backend skipped): no other pair can happen.
  const pairs = text.split('\n').filter((l) => l.startsWith('magma_gateway_fallbacks_total{'));
  assert.deepEqual(pairs.sort(), [
    'magma_gateway_fallbacks_total{agent="default",route="ab",from="a",to="b"} 0',
    'magma_gateway_fallbacks_total{agent="default",route="ab",from="b",to="a"} 0',
    'magma_gateway_fallbacks_total{agent="default",route="main",from="a",to="b"} 0',
  ]);
  for (const outcome of ['ok', 'failed', 'invalid', 'dropped', 'no_backend']) {
    zero(`magma_gateway_shadow_requests_total{agent="default",route="main",backend="s",outcome="${outcome}"}`);
  }
  zero('magma_gateway_shadow_agreement_total{agent="default",route="main",backend="s",agreed="false"}');
  zero('magma_gateway_replay_total{outcome="hit"}');
  zero('magma_gateway_config_reloads_total{result="refused"}');
  zero('magma_gateway_http_requests_total{endpoint="/v1/responses",status_code="200",client="anonymous"}');
  zero('magma_gateway_http_request_duration_seconds_count{endpoint="/v1/responses",client="anonymous"}');
  zero('magma_gateway_store_fallback_active');
  zero('magma_gateway_store_leases_lost_total');
  zero('magma_gateway_permit_timeouts_total');
  zero('magma_gateway_store_fallbacks_total');
  // Zero-initialised series count from 0: a later event is an increase, not a new series at 1.
  assert.equal((await gw.post({ request_id: 'z', inputs: [mkInput(1)] })).status, 200);
  const after = await (await fetch(`${gw.url}/metrics`)).text();
  assert.equal(sample(after, 'magma_gateway_inputs_total{agent="default",route="main",backend="a"}'), 1);
  assert.equal(sample(after, 'magma_gateway_backend_request_duration_seconds_count{backend="a"}'), 1);
});

test('magma_gateway_build_info{version} is 1, with the package version', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'v' });
  const gw = await f.gateway({ backends: { v: { url: agent.url } }, routes: [{ name: 'd', backend: 'v' }] });
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.equal(sample(text, `magma_gateway_build_info{version="${PACKAGE_VERSION}"}`), 1);
  assert.equal(text.split('\n').filter((l) => l.startsWith('magma_gateway_build_info{')).length, 1);
});

test('a permit that never came free is counted in magma_gateway_permit_timeouts_total', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'p', behaviour: (r) => (r.path === '/v1/responses' ? { hang: true } : {}) });
  const gw = await f.gateway({
    backends: { p: { url: agent.url, max_in_flight: 1, queue_timeout_s: 0.05 } },
    routes: [{ name: 'd', backend: 'p' }],
  });
  const held = gw.post({ request_id: 'held', inputs: [mkInput(1)] });
  await waitFor('the first batch at the agent', () => agent.inFlight === 1);
  const refused = (await gw.post({ request_id: 'queued', inputs: [mkInput(2)] })).json as { error: { code: string } | null }[];
  assert.equal(refused[0]!.error?.code, 'gateway_overloaded');
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.equal(sample(text, 'magma_gateway_permit_timeouts_total'), 1);
  assert.equal(sample(text, 'magma_gateway_store_fallback_active'), 0, 'the memory store never falls back');
  agent.kill();
  assert.equal((await held).status, 200);
});

test('while Redis is unreachable the store exports its fallback: active 1, local answers counted, store_up 0', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'r' });
  const gw = await f.gateway({
    // Port 1: nothing listens, so the Redis store answers from per-process state from the start.
    state: { redis: { url: 'redis://127.0.0.1:1', key_prefix: `metrics-test-${process.pid}:` } },
    backends: { r: { url: agent.url } },
    routes: [{ name: 'd', backend: 'r' }],
  });
  assert.equal((await gw.post({ request_id: 'local', inputs: [mkInput(1)] })).status, 200);
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  assert.equal(sample(text, 'magma_gateway_store_up'), 0);
  assert.equal(sample(text, 'magma_gateway_store_fallback_active'), 1);
  assert.ok((sample(text, 'magma_gateway_store_fallbacks_total') ?? 0) >= 1, 'the batch\'s replay lookup was answered locally');
  assert.equal(sample(text, 'magma_gateway_store_leases_lost_total'), 0);
});

test('a permit whose Redis lease vanished while held is counted in magma_gateway_store_leases_lost_total', async (t) => {
  const f = useFixtures(t);
  const prefix = `metrics-lease-${process.pid}-${Date.now()}:`;
  const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
  await redis.connect();
  // Registered first, so it runs last: once the gateway and the agent are closed.
  f.defer(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });
  const agent = await f.agent({ name: 'l', behaviour: (r) => (r.path === '/v1/responses' ? { hang: true } : {}) });
  const gw = await f.gateway({
    state: { redis: { url: 'redis://127.0.0.1:6379', key_prefix: prefix }, lease_s: 0.3 },
    backends: { l: { url: agent.url, max_in_flight: 1 } },
    routes: [{ name: 'd', backend: 'l' }],
  });
  await waitFor('the store up', () => gw.app.gateway.store.isUp());
  const held = gw.post({ request_id: 'held', inputs: [mkInput(1)] });
  await waitFor('the batch at the agent, its permit held in Redis', () => agent.inFlight === 1);
  const holders = await redis.keys(`${prefix}sem:*:holders`);
  assert.equal(holders.length, 1, holders.join(', '));
  // What Redis losing its data looks like to the holder: the next renewal finds no lease.
  await redis.del(holders[0]!);
  const lost = async (): Promise<number> => sample(await (await fetch(`${gw.url}/metrics`)).text(), 'magma_gateway_store_leases_lost_total') ?? 0;
  await waitFor('the lost lease counted', async () => (await lost()) === 1);
  agent.kill();
  assert.equal((await held).status, 200);
});
