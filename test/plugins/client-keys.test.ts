/**
 * Client keys on a listening gateway (docs/operations.md#client-keys, docs/operations.md#client-keys):
 * each transport (address, Authorization: Bearer, x-api-key) on both fronts (the raw batch front
 * and fastify, which serves every other path, a batch with a query string and app.inject), the same 401 on
 * every agent endpoint and unknown path, the health-check and /metrics exceptions, `/k/` without clients, and
 * the `client` label of the request metrics.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { http, type HttpAnswer } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';
import { injectBatch } from '../helpers/inject.js';

const KEY_A = 'team-a-key-6f1d0c9e2b7a4d13';
const KEY_B = 'team-b-key-93b2e5a07c4f1d68';
const ADMIN = 'admin-token-0123456789';

let agent: FakeAgent;
let gw: TestGateway;
const cleanup: (() => Promise<void>)[] = [];

before(async () => {
  agent = await startFakeAgent({ name: 'a' });
  gw = await startGateway(oneBackend({ a: agent }, { admin: { token: ADMIN, protect_metrics: true }, clients: { 'team-a': { key: KEY_A }, 'team-b': { key: KEY_B } } }));
  cleanup.push(() => gw.close(), () => agent.close());
});
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const batch = (id: string): object => ({ request_id: id, inputs: [mkInput(1), mkInput(2, { num_outputs: 2 })] });

/** The same batch on the raw front (`/v1/responses`) and on fastify (a query string leaves it to fastify). */
const FRONTS = { raw: '/v1/responses', fastify: '/v1/responses?via=fastify' } as const;

type Transport = { name: string; prefix: string; headers: Record<string, string> };
const transports = (key: string): Transport[] => [
  { name: 'address', prefix: `/k/${key}`, headers: {} },
  { name: 'bearer', prefix: '', headers: { authorization: `Bearer ${key}` } },
  { name: 'x-api-key', prefix: '', headers: { 'x-api-key': key } },
];

async function metricsText(): Promise<string> {
  const res = await http(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(res.status, 200);
  return res.text;
}

function sample(text: string, series: string): number {
  const row = text.split('\n').find((l) => l.startsWith(`${series} `));
  return row === undefined ? 0 : Number(row.slice(series.length + 1));
}

function assertRefused(res: HttpAnswer, detail: RegExp, where: string): void {
  assert.equal(res.status, 401, `${where}: ${res.text}`);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="magma-gateway"', where);
  assert.equal(res.headers.get('connection'), 'close', where);
  const body = res.json as { detail: string; code: string };
  assert.equal(body.code, 'GATEWAY_ERR_UNAUTHORIZED', where);
  assert.match(body.detail, detail, where);
}

test('each transport is served on both fronts, and the batch reaches the backend', async () => {
  for (const t of transports(KEY_A)) {
    for (const [front, path] of Object.entries(FRONTS)) {
      const before = agent.requestsTo('/v1/responses').length;
      const res = await http(`${gw.url}${t.prefix}${path}`, { method: 'POST', body: batch(`${t.name}-${front}`), headers: t.headers });
      assert.equal(res.status, 200, `${t.name} on ${front}: ${res.text}`);
      const cands = res.json as Cand[];
      assert.deepEqual(cands.map((c) => [c.source_id, c.candidate_index, c.status]), [[1, 0, 'completed'], [2, 0, 'completed'], [2, 1, 'completed']]);
      assert.ok(res.headers.has('x-gateway-overhead-ms'));
      assert.equal(agent.requestsTo('/v1/responses').length, before + 1);
    }
    const info = await http(`${gw.url}${t.prefix}/v1/info`, { headers: t.headers });
    assert.equal(info.status, 200, `${t.name} /v1/info`);
    assert.equal((info.json as { protocol_version: string }).protocol_version, '2.0');
  }
});

test('the key is not forwarded to the backend', async () => {
  agent.reset();
  const res = await http(`${gw.url}/k/${KEY_A}/v1/responses`, {
    method: 'POST',
    body: batch('no-forward'),
    headers: { authorization: `Bearer ${KEY_A}`, 'x-api-key': KEY_A },
  });
  assert.equal(res.status, 200);
  const [sent] = agent.requestsTo('/v1/responses');
  assert.ok(sent !== undefined);
  assert.ok(!JSON.stringify(sent.headers).includes(KEY_A), JSON.stringify(sent.headers));
  assert.equal(sent.path, '/v1/responses');
});

test('the same key in the address and a header is served; different keys are refused on both fronts', async () => {
  for (const path of Object.values(FRONTS)) {
    const same = await http(`${gw.url}/k/${KEY_B}${path}`, { method: 'POST', body: batch('same'), headers: { 'x-api-key': KEY_B } });
    assert.equal(same.status, 200);
    const differ = await http(`${gw.url}/k/${KEY_A}${path}`, { method: 'POST', body: batch('differ'), headers: { authorization: `Bearer ${KEY_B}` } });
    assertRefused(differ, /differ/, `${path} with two keys`);
  }
});

test('a missing or wrong key gets the same 401 on every agent endpoint, known or not, and reaches no backend', async () => {
  agent.reset();
  const asks: { method: string; path: string; body?: object }[] = [
    { method: 'POST', path: FRONTS.raw, body: batch('r') },
    { method: 'POST', path: FRONTS.fastify, body: batch('f') },
    { method: 'GET', path: '/v1/info' },
    { method: 'POST', path: '/v1/coaching', body: { run_id: 'r' } },
    { method: 'PUT', path: '/v1/coaching/sessions/r1', body: {} },
    { method: 'GET', path: '/nope' },
    { method: 'GET', path: '/v1/responses' },
    { method: 'GET', path: '/agents/ab-kitchen/v1/info' },
    { method: 'GET', path: '/gateway/backends' },
  ];
  for (const a of asks) {
    const missing = await http(`${gw.url}${a.path}`, { method: a.method, body: a.body });
    assertRefused(missing, /client key required: put it in the address/, `${a.method} ${a.path} without a key`);
    const wrongs: { prefix: string; headers: Record<string, string> }[] = [
      { prefix: '/k/wrong-key-123456789', headers: {} },
      { prefix: '', headers: { 'x-api-key': `${KEY_A}x` } },
    ];
    for (const wrong of wrongs) {
      const res = await http(`${gw.url}${wrong.prefix}${a.path}`, { method: a.method, body: a.body, headers: wrong.headers });
      assertRefused(res, /^unknown client key$/, `${a.method} ${a.path} with a wrong key`);
      assert.ok(!res.text.includes('wrong-key') && !res.text.includes(KEY_A), res.text);
    }
  }
  assert.deepEqual(agent.requests.filter((r) => r.path !== '/health' && r.path !== '/v1/info'), []);
});

test('both fronts refuse a batch with the same body and headers', async () => {
  const raw = await http(`${gw.url}${FRONTS.raw}`, { method: 'POST', body: batch('x') });
  const viaFastify = await http(`${gw.url}${FRONTS.fastify}`, { method: 'POST', body: batch('x') });
  const injected = await injectBatch(gw.app, { method: 'POST', url: '/v1/responses', payload: batch('x'), headers: { 'content-type': 'application/json' } });
  assert.deepEqual(raw.json, viaFastify.json);
  assert.deepEqual(JSON.parse(injected.body), raw.json);
  for (const h of ['www-authenticate', 'connection']) {
    assert.equal(raw.headers.get(h), viaFastify.headers.get(h), h);
    assert.equal(injected.headers[h], raw.headers.get(h), h);
  }
  assert.ok(raw.headers.has('x-gateway-overhead-ms') && viaFastify.headers.has('x-gateway-overhead-ms'));
});

test('injected requests (fastify\'s app.inject, the front\'s listener) strip /k/<key> and decide the same', async () => {
  const info = await gw.app.inject({ method: 'GET', url: `/k/${KEY_A}/v1/info` });
  assert.equal(info.statusCode, 200, info.body);
  const res = await injectBatch(gw.app, {
    method: 'POST',
    url: `/k/${KEY_B}/v1/responses`,
    payload: batch('inject'),
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal((JSON.parse(res.body) as Cand[]).length, 3);
  const wrong = await gw.app.inject({ method: 'GET', url: '/k/nope-0123456789abcd/v1/info' });
  assert.equal(wrong.statusCode, 401);
  const twice = await gw.app.inject({ method: 'GET', url: `/k/${KEY_A}/k/${KEY_A}/v1/info` });
  assert.equal(twice.statusCode, 404, 'one prefix is stripped; the second is part of a path nobody serves');
});

test('/health answers without a key, refuses a wrong one (a mistyped key fails the first call) and accepts a right one', async () => {
  assert.equal((await http(`${gw.url}/health`)).status, 200);
  assert.equal((await http(`${gw.url}/k/${KEY_A}/health`)).status, 200);
  assert.equal((await http(`${gw.url}/health`, { headers: { 'x-api-key': KEY_B } })).status, 200);
  assertRefused(await http(`${gw.url}/k/mistyped-key-0123456/health`), /unknown client key/, '/k/<wrong>/health');
  assertRefused(await http(`${gw.url}/health`, { headers: { authorization: 'Bearer mistyped' } }), /unknown client key/, 'bearer');
  const head = await fetch(`${gw.url}/health`, { method: 'HEAD' });
  assert.equal(head.status, 200);
});

test('/metrics does not look at client keys: the admin token governs it (admin.protect_metrics)', async () => {
  assert.equal((await http(`${gw.url}/metrics`)).status, 401);
  assert.equal((await http(`${gw.url}/metrics`, { headers: { 'x-api-key': KEY_A } })).status, 401, 'a client key is not the admin token');
  const withToken = await http(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(withToken.status, 200, 'the admin token in Authorization is no client key to refuse');
  assert.ok(!withToken.text.includes(KEY_A) && !withToken.text.includes(KEY_B), 'no key in any label');
});

test('the request metrics carry the client: its name, unauthorized for a refused key, anonymous for a keyless health check', async () => {
  const before = await metricsText();
  const series = (client: string, endpoint = '/v1/responses', status = '200'): string =>
    `magma_gateway_http_requests_total{endpoint="${endpoint}",status_code="${status}",client="${client}"}`;
  await http(`${gw.url}/k/${KEY_B}${FRONTS.raw}`, { method: 'POST', body: batch('m1') });
  await http(`${gw.url}${FRONTS.fastify}`, { method: 'POST', body: batch('m2'), headers: { 'x-api-key': KEY_B } });
  await http(`${gw.url}/k/bad-key-0123456789ab${FRONTS.raw}`, { method: 'POST', body: batch('m3') });
  await http(`${gw.url}/v1/info`);
  await http(`${gw.url}/health`);
  const after = await metricsText();
  const delta = (s: string): number => sample(after, s) - sample(before, s);
  assert.equal(delta(series('team-b')), 2, 'both fronts count the client');
  assert.equal(delta(series('unauthorized', '/v1/responses', '401')), 1);
  assert.equal(delta(series('unauthorized', '/v1/info', '401')), 1);
  assert.equal(delta(series('anonymous', '/health')), 1);
  assert.ok(
    delta('magma_gateway_http_request_duration_seconds_count{endpoint="/v1/responses",client="team-b"}') === 2,
    'the duration histogram carries the client too',
  );
  for (const c of ['team-a', 'team-b']) assert.ok(after.includes(series(c)), `the ${c} batch series exists`);
});

test('without clients: a /k/<key> address is a 404 naming clients: on both fronts, and headers are not read', async () => {
  const open = await startGateway(oneBackend({ a: agent }));
  cleanup.push(() => open.close());
  for (const [method, path] of [['POST', FRONTS.raw], ['POST', FRONTS.fastify], ['GET', '/v1/info'], ['GET', '/health'], ['GET', '/metrics']] as const) {
    const res = await http(`${open.url}/k/${KEY_A}${path}`, { method, body: method === 'POST' ? batch('k') : undefined });
    assert.equal(res.status, 404, `${method} ${path}`);
    const body = res.json as { detail: string; code: string };
    assert.equal(body.code, 'GATEWAY_ERR_NOT_FOUND');
    assert.match(body.detail, /no clients: in its config/);
    assert.ok(!res.text.includes(KEY_A));
  }
  const served = await http(`${open.url}/v1/responses`, { method: 'POST', body: batch('open'), headers: { authorization: 'Bearer whatever' } });
  assert.equal(served.status, 200);
  const metrics = await http(`${open.url}/metrics`);
  assert.match(metrics.text, /magma_gateway_http_requests_total\{endpoint="\/v1\/responses",status_code="200",client="anonymous"\} 1/);
});
