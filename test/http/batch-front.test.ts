/**
 * The front for POST /v1/responses (http/batch-front.ts): it answers every batch path, query string or not,
 * with what fastify and the app's hooks do for other paths, and leaves everything else to fastify.
 */
import assert from 'node:assert/strict';
import type { RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { request } from 'undici';
import { stringify } from 'yaml';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { BatchFront } from '../../src/http/batch-front.js';
import type { FrontHost } from '../../src/http/front-exchange.js';
import type { FakeAgent } from '../helpers/fake-agent.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, withTestDefaults, type Cand, type TestGateway } from '../helpers/gateway.js';

const f = useFixtures();

async function agentAndGateway(extra: Record<string, unknown> = {}): Promise<{ a: FakeAgent; gw: TestGateway }> {
  const a = await f.agent({ name: 'a' });
  return { a, gw: await f.gateway(oneBackend({ a }, extra)) };
}

function metricValue(text: string, line: string): number | undefined {
  const row = text.split('\n').find((l) => l.startsWith(line + ' '));
  return row === undefined ? undefined : Number(row.slice(line.length + 1));
}

test('a batch on the raw front carries x-request-id and x-gateway-overhead-ms and is counted in the HTTP metrics', async () => {
  const { gw } = await agentAndGateway();
  const res = await gw.post({ request_id: 'f1', inputs: [mkInput(1)] }, { 'x-request-id': 'rid-front-1' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('x-request-id'), 'rid-front-1');
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.match(res.headers.get('x-gateway-overhead-ms') ?? '', /^\d+\.\d\d$/);
  const bad = await gw.post('{"request_id":"f2"}');
  assert.equal(bad.status, 422);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.equal(metricValue(metrics, 'magma_gateway_http_requests_total{endpoint="/v1/responses",status_code="200",client="anonymous"}'), 1);
  assert.equal(metricValue(metrics, 'magma_gateway_http_requests_total{endpoint="/v1/responses",status_code="422",client="anonymous"}'), 1);
  assert.equal(metricValue(metrics, 'magma_gateway_http_request_duration_seconds_count{endpoint="/v1/responses",client="anonymous"}'), 2);
});

test('a chunked body (no content-length) over body_limit_mb is 413 with a JSON detail', async () => {
  const { a, gw } = await agentAndGateway({ server: { body_limit_mb: 0.01 } });
  a.reset();
  const big = JSON.stringify({ request_id: 'r', inputs: [mkInput(1, { memory: { blob: 'x'.repeat(30_000) } })] });
  const chunks = [big.slice(0, 8000), big.slice(8000, 16000), big.slice(16000)];
  const res = await request(`${gw.url}/v1/responses`, { method: 'POST', body: Readable.from(chunks) });
  const text = await res.body.text();
  assert.equal(res.statusCode, 413);
  assert.match((JSON.parse(text) as { detail: string }).detail, /body_limit_mb \(0\.01 MiB\)/);
  assert.equal(a.requestsTo('/v1/responses').length, 0);
});

test('a batch path with a query string is served by the front with the same answer', async () => {
  const { gw } = await agentAndGateway();
  const res = await fetch(`${gw.url}/v1/responses?via=front`, {
    method: 'POST',
    body: JSON.stringify({ request_id: 'q1', inputs: [mkInput(4, { num_outputs: 2 })] }),
  });
  assert.equal(res.status, 200);
  const cands = (await res.json()) as Cand[];
  assert.deepEqual(cands.map((c) => [c.source_id, c.candidate_index, c.status]), [[4, 0, 'completed'], [4, 1, 'completed']]);
  assert.match(res.headers.get('x-gateway-overhead-ms') ?? '', /^\d+\.\d\d$/);
});

/** A front whose "fastify" answers `fastify`; with an app attached or not. */
async function frontWith(host: FrontHost | undefined): Promise<string> {
  const fastifyStub: RequestListener = (_req, res) => {
    res.end('fastify');
  };
  const serverOpts = { keep_alive_timeout_s: 1, headers_timeout_s: 60, body_timeout_s: 300, max_connections: 100, tls_handshake_timeout_s: 10 };
  const front = new BatchFront(serverOpts);
  if (host !== undefined) front.attach(host);
  const server = front.createServer(fastifyStub);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  f.defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function hostOf(app: TestGateway['app']): FrontHost {
  return { gateway: app.gateway, log: app.log, bodyLimit: 1024 * 1024, bodyLimitMb: 1, closing: () => false, draining: () => false };
}

test('while the app closes, the front answers batches 503 itself, in the gateway\'s error shape', async () => {
  const { gw } = await agentAndGateway();
  const url = await frontWith({ ...hostOf(gw.app), closing: () => true });
  for (const path of ['/v1/responses', '/v1/responses?x=1']) {
    const res = await fetch(`${url}${path}`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 503, path);
    assert.equal(((await res.json()) as { code: string }).code, 'GATEWAY_ERR_NOT_READY');
    assert.equal(res.headers.get('connection'), 'close');
  }
});

test('other paths and methods, and a front with no app yet, go to fastify', async () => {
  const { gw } = await agentAndGateway();
  const attached = await frontWith(hostOf(gw.app));
  for (const [method, path] of [['GET', '/v1/responses'], ['POST', '/v1/info'], ['POST', '/v1/responses/']] as const) {
    const res = await fetch(`${attached}${path}`, { method, body: method === 'POST' ? '{}' : undefined });
    assert.equal(await res.text(), 'fastify', `${method} ${path}`);
  }
  const bare = await frontWith(undefined);
  assert.equal(await (await fetch(`${bare}/v1/responses`, { method: 'POST', body: '{}' })).text(), 'fastify');
});

test('the server keeps connections alive for the configured time, like the server fastify builds', async () => {
  const { gw } = await agentAndGateway();
  assert.equal(gw.app.server.keepAliveTimeout, 72_000);
  assert.equal(gw.app.server.requestTimeout, 0);
});

test('a virtual agent\'s batch path is answered on the front itself, query string or encoded name; its other methods and paths go to fastify', async () => {
  const a = await f.agent({ name: 'lab' });
  const config = parseConfigText(
    stringify(withTestDefaults({ backends: { lab: { url: a.url } }, agents: { lab: { routes: [{ name: 'main', backend: 'lab' }] } } }, false)),
    'front-agents.yaml',
    {},
  );
  const app = await buildApp({ config, logger: false, defaultMetrics: false });
  await app.ready();
  const fastifyStub: RequestListener = (_req, res) => {
    res.end('fastify');
  };
  const front = new BatchFront(config.server);
  front.attach(hostOf(app));
  const server = front.createServer(fastifyStub);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  f.defer(() => app.close());
  f.defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const body = JSON.stringify({ request_id: 'fa1', inputs: [mkInput(1)] });
  const served = await fetch(`${url}/agents/lab/v1/responses`, { method: 'POST', body });
  assert.equal(served.status, 200);
  assert.equal(((await served.json()) as Cand[])[0]!.memory.seen_by, 'lab');
  const unknown = await fetch(`${url}/agents/nope/v1/responses`, { method: 'POST', body });
  assert.equal(unknown.status, 404, 'the front answers an unknown agent itself');
  assert.equal(((await unknown.json()) as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
  for (const path of ['/agents/lab/v1/responses?x=1', '/agents/%6Cab/v1/responses']) {
    assert.equal((await fetch(`${url}${path}`, { method: 'POST', body })).status, 200, `the front serves ${path}`);
  }
  for (const [method, path] of [['GET', '/agents/lab/v1/responses'], ['POST', '/agents/lab/v1/info']] as const) {
    const res = await fetch(`${url}${path}`, { method, body: method === 'POST' ? body : undefined });
    assert.equal(await res.text(), 'fastify', `${method} ${path}`);
  }
});
