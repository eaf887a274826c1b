/**
 * A batch path with and without a query string (both answered by the batch front, http/batch-front.ts) gets
 * every outcome the same: status, JSON body, the gateway's headers and the HTTP metrics they count. Their
 * access-log lines are compared in access-log-parity.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { mkInput } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';

const KEY = 'team-a-key-0b8e4d1f7c2a9e36';

interface Answer {
  status: number;
  contentType: string | undefined;
  body: unknown;
  overhead: boolean;
  requestId: string | undefined;
}

/** What a client sees, minus what differs per request by nature (the gateway's own time). */
async function send(url: string, body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
  const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.body.text();
  const h = (name: string): string | undefined => {
    const v = res.headers[name];
    return Array.isArray(v) ? v.join(',') : v;
  };
  return {
    status: res.statusCode,
    contentType: h('content-type'),
    body: JSON.parse(text) as unknown,
    overhead: /^\d+\.\d\d$/.test(h('x-gateway-overhead-ms') ?? ''),
    requestId: h('x-request-id'),
  };
}

test('with and without a query string, each outcome has the same status, body and headers, and is counted the same', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const one = oneBackend({ a });
  // The virtual agent `lab` routes as the default agent does.
  const gw = await f.gateway({ ...one, server: { body_limit_mb: 0.05 }, clients: { 'team-a': { key: KEY } }, agents: { lab: { routes: one.routes } } });
  const auth = { authorization: `Bearer ${KEY}` };
  const cases: { name: string; path: string; body: string | Buffer; headers: Record<string, string> }[] = [
    { name: 'a served batch', path: '/v1/responses', body: JSON.stringify({ request_id: 'p1', inputs: [mkInput(7, { num_outputs: 2 })] }), headers: auth },
    { name: 'a virtual agent batch', path: '/agents/lab/v1/responses', body: JSON.stringify({ request_id: 'p2', inputs: [mkInput(8)] }), headers: auth },
    { name: 'a batch the contract refuses (422)', path: '/v1/responses', body: '{"request_id":"p3","inputs":[{"id":1}]}', headers: auth },
    { name: 'a body that is not JSON (422)', path: '/v1/responses', body: '{"request_id":', headers: auth },
    { name: 'a body that is not UTF-8 (400)', path: '/v1/responses', body: Buffer.from([0x7b, 0xff, 0x7d]), headers: auth },
    { name: 'a body over body_limit_mb (413)', path: '/v1/responses', body: JSON.stringify({ request_id: 'p4', inputs: [mkInput(1, { memory: { blob: 'x'.repeat(80_000) } })] }), headers: auth },
    { name: 'no client key (401)', path: '/v1/responses', body: JSON.stringify({ request_id: 'p5', inputs: [mkInput(1)] }), headers: {} },
    { name: 'an unknown virtual agent (404)', path: '/agents/nobody/v1/responses', body: JSON.stringify({ request_id: 'p6', inputs: [mkInput(1)] }), headers: auth },
  ];
  for (const [i, c] of cases.entries()) {
    const raw = await send(`${gw.url}${c.path}`, c.body, { ...c.headers, 'x-request-id': `case-${i}-raw` });
    const viaFastify = await send(`${gw.url}${c.path}?via=fastify`, c.body, { ...c.headers, 'x-request-id': `case-${i}-fastify` });
    // x-request-id is echoed (or not) alike: compared as "the one sent" rather than by value.
    const echoed = (a: Answer, sent: string): Answer => ({ ...a, requestId: a.requestId === sent ? 'echoed' : a.requestId });
    assert.deepEqual(echoed(viaFastify, `case-${i}-fastify`), echoed(raw, `case-${i}-raw`), c.name);
    assert.ok(raw.overhead, `${c.name}: x-gateway-overhead-ms`);
    assert.equal(raw.contentType?.startsWith('application/json'), true, `${c.name}: content-type`);
  }
  // Each outcome counted once per front, under the same series.
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  const series = metrics.split('\n').filter((l) => l.startsWith('magma_gateway_http_requests_total{') && /endpoint="\/(v1|agents)/.test(l));
  const counts = new Map(series.map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]));
  const expect = (endpoint: string, status: number, client: string, n: number): void => {
    const key = `magma_gateway_http_requests_total{endpoint="${endpoint}",status_code="${status}",client="${client}"}`;
    assert.equal(counts.get(key), n, key);
  };
  expect('/v1/responses', 200, 'team-a', 2);
  expect('/agents/:agent/v1/responses', 200, 'team-a', 2);
  expect('/v1/responses', 422, 'team-a', 4);
  expect('/v1/responses', 400, 'team-a', 2);
  expect('/v1/responses', 413, 'team-a', 2);
  expect('/agents/:agent/v1/responses', 404, 'team-a', 2);
});
