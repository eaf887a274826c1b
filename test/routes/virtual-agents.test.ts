/**
 * Virtual agents over HTTP (docs/routing.md#virtual-agents), on a listening gateway with real loopback agents: each
 * agent is served at /agents/<name>/ with its own routes, identity and readiness; an unknown name is a JSON 404
 * naming it; the raw front (listen) and fastify (inject) answer alike; metrics carry the agent's name.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { runChecks } from '../../src/commands/check.js';
import type { FakeAgent } from '../helpers/fake-agent.js';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { injectBatch } from '../helpers/inject.js';

let kitchen: FakeAgent;
let lab: FakeAgent;
let root: FakeAgent;
let gw: TestGateway;

const f = useFixtures();

before(async () => {
  [kitchen, lab, root] = await Promise.all([
    f.agent({ name: 'kitchen', behaviour: { info: { capabilities: { inference: true, coaching: true } } } }),
    f.agent({ name: 'lab' }),
    f.agent({ name: 'root' }),
  ]);
  gw = await f.gateway(oneBackend({ root, kitchen, lab }, {
    agent: { agent_id: 'the-gateway' },
    agents: {
      'ab-kitchen': {
        agent: { agent_id: 'kitchen-ab', agent_version: '1.0' },
        memory_key: '_gw_kitchen',
        routes: [{ name: 'main', backend: 'kitchen' }],
      },
      lab: { routes: [{ name: 'main', backend: 'lab' }] },
    },
  }));
});

function batch(id: string): object {
  return { request_id: id, inputs: [mkInput(1), mkInput(2, { num_outputs: 2 })] };
}

async function postTo(path: string, body: object | string): Promise<{ status: number; json: unknown; text: string; headers: Headers }> {
  return http(`${gw.url}${path}`, { method: 'POST', body });
}

test('two virtual agents with different routes send their batches to different backends', async () => {
  kitchen.reset();
  lab.reset();
  root.reset();
  const k = await postTo('/agents/ab-kitchen/v1/responses', batch('k1'));
  const l = await postTo('/agents/lab/v1/responses', batch('l1'));
  const r = await postTo('/v1/responses', batch('r1'));
  assert.deepEqual([k.status, l.status, r.status], [200, 200, 200], k.text + l.text + r.text);
  const servedBy = (res: { json: unknown }): string[] => (res.json as Cand[]).map((c) => String(c.memory.seen_by));
  assert.deepEqual(servedBy(k), ['kitchen', 'kitchen', 'kitchen']);
  assert.deepEqual(servedBy(l), ['lab', 'lab', 'lab']);
  assert.deepEqual(servedBy(r), ['root', 'root', 'root']);
  assert.deepEqual(
    [kitchen, lab, root].map((a) => a.requestsTo('/v1/responses').length),
    [1, 1, 1],
    'each batch reached only its own agent\'s backend',
  );
});

test('a virtual agent tags candidates under its own memory key, and its backend never sees the tag', async () => {
  kitchen.reset();
  const first = await postTo('/agents/ab-kitchen/v1/responses', batch('mk1'));
  assert.equal(first.status, 200, first.text);
  const cand = (first.json as Cand[])[0]!;
  assert.deepEqual(cand.memory._gw_kitchen, { backend: 'kitchen', route: 'main' });
  assert.equal(cand.memory._gateway, undefined);
  const next = await postTo('/agents/ab-kitchen/v1/responses', { request_id: 'mk2', inputs: [mkInput(1, { memory: cand.memory })] });
  assert.equal(next.status, 200, next.text);
  const sent = kitchen.requestsTo('/v1/responses')[1]!.body as { inputs: { memory: Record<string, unknown> }[] };
  assert.equal(Object.hasOwn(sent.inputs[0]!.memory, '_gw_kitchen'), false);
});

test('a batch for an unknown agent is a JSON 404 naming it, on the raw front and through fastify alike', async () => {
  const before = kitchen.requestsTo('/v1/responses').length + lab.requestsTo('/v1/responses').length;
  const listened = await postTo('/agents/ab-kitchn/v1/responses', batch('u1'));
  const injected = await injectBatch(gw.app, { method: 'POST', url: '/agents/ab-kitchn/v1/responses', payload: JSON.stringify(batch('u1')) });
  assert.equal(listened.status, 404);
  assert.equal(injected.statusCode, 404);
  const body = listened.json as { detail: string; code: string };
  assert.equal(body.code, 'GATEWAY_ERR_UNKNOWN_AGENT');
  assert.match(body.detail, /unknown agent "ab-kitchn"/);
  assert.deepEqual(JSON.parse(injected.body), body);
  assert.equal(listened.headers.get('content-type'), 'application/json');
  assert.equal(kitchen.requestsTo('/v1/responses').length + lab.requestsTo('/v1/responses').length, before, 'no backend was called');
});

test('the raw front and fastify give a virtual agent\'s batch the same answer', async () => {
  const body = JSON.stringify({ request_id: 'same-1', inputs: [mkInput(7, { num_outputs: 2 })] });
  const listened = await postTo('/agents/lab/v1/responses', body);
  // The query string makes the front leave the request to fastify; inject never reaches the front at all.
  const viaFastify = await postTo('/agents/lab/v1/responses?via=fastify', body);
  const injected = await injectBatch(gw.app, { method: 'POST', url: '/agents/lab/v1/responses', payload: body });
  assert.deepEqual([listened.status, viaFastify.status, injected.statusCode], [200, 200, 200]);
  assert.equal(viaFastify.text, listened.text);
  assert.equal(injected.body, listened.text);
  for (const h of ['x-gateway-overhead-ms', 'content-type']) {
    assert.ok(listened.headers.get(h) !== null && injected.headers[h] !== undefined, h);
  }
});

test('"default" under /agents/ is not the default agent: 404 saying where it is served', async () => {
  const res = await postTo('/agents/default/v1/responses', batch('d1'));
  assert.equal(res.status, 404);
  assert.match((res.json as { detail: string }).detail, /served at \/, not under \/agents\//);
});

test('names no agent can have (too long, percent-encoded, dots) get the same answer from both fronts', async () => {
  const body = JSON.stringify(batch('odd'));
  for (const name of ['x'.repeat(65), 'x'.repeat(101), 'x'.repeat(5000), '%6Cab', '..', 'a%2Fb']) {
    const url = `/agents/${name}/v1/responses`;
    const listened = await postTo(url, body);
    const injected = await injectBatch(gw.app, { method: 'POST', url, payload: body });
    assert.equal(listened.status, injected.statusCode, name.slice(0, 20));
    assert.equal(listened.text, injected.body, name.slice(0, 20));
  }
  // Percent-encoding is decoded by fastify's router: `%6Cab` is the agent lab.
  assert.equal((await postTo('/agents/%6Cab/v1/responses', body)).status, 200);
  const long = await postTo(`/agents/${'x'.repeat(65)}/v1/responses`, body);
  assert.equal(long.status, 404);
  assert.equal((long.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
});

test('each agent\'s /v1/info has its own identity, and capabilities of its own backends', async () => {
  const k = await http(`${gw.url}/agents/ab-kitchen/v1/info`);
  const l = await http(`${gw.url}/agents/lab/v1/info`);
  const r = await http(`${gw.url}/v1/info`);
  assert.deepEqual([k.status, l.status, r.status], [200, 200, 200]);
  const ki = k.json as { agent_id: string; agent_version: string; protocol_version: string; capabilities: Record<string, boolean> };
  const li = l.json as typeof ki;
  const ri = r.json as typeof ki;
  assert.deepEqual([ki.agent_id, ki.agent_version, ki.protocol_version], ['kitchen-ab', '1.0', '2.0']);
  assert.equal(li.agent_id, 'lab', 'an agent without `agent` is named after its key');
  assert.equal(ri.agent_id, 'the-gateway');
  assert.equal(ki.capabilities.coaching, true, 'the kitchen agent reaches only a coaching backend');
  assert.equal(li.capabilities.coaching ?? false, false);
  const unknown = await http(`${gw.url}/agents/nope/v1/info`);
  assert.equal(unknown.status, 404);
  assert.equal((unknown.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
});

test('each agent\'s /health follows its own backends; the root /health only the default agent\'s', async () => {
  const [up, down] = await Promise.all([f.agent({ name: 'up' }), f.agent({ name: 'down' })]);
  const g = await f.gateway(oneBackend({ up: up.url, down: down.url }, { probe_interval_s: 0.05, agents: { a: { routes: [{ name: 'main', backend: 'up' }] }, b: { routes: [{ name: 'main', backend: 'down' }] } } }));
  assert.equal((await http(`${g.url}/agents/b/health`)).status, 200);
  down.setBehaviour({ health: 503 });
  await waitFor('agent b not ready', async () => (await http(`${g.url}/agents/b/health`)).status === 503);
  assert.deepEqual((await http(`${g.url}/agents/b/health`)).json, {
    detail: 'not ready: no ready, compatible backend for route(s) main',
    code: 'GATEWAY_ERR_NOT_READY',
  });
  assert.deepEqual((await http(`${g.url}/agents/a/health`)).json, { status: 'ready' }, 'another agent stays ready');
  assert.equal((await http(`${g.url}/health`)).status, 200, 'the default agent stays ready');
  const unknown = await http(`${g.url}/agents/c/health`);
  assert.equal(unknown.status, 404);
  assert.equal((unknown.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
  down.setBehaviour({});
  await waitFor('agent b ready again', async () => (await http(`${g.url}/agents/b/health`)).status === 200);
});

test('the batch series carry the agent\'s name; the HTTP series the route pattern', async () => {
  const res = await postTo('/agents/lab/v1/responses', batch('m1'));
  assert.equal(res.status, 200);
  await postTo('/agents/nobody/v1/responses', batch('m2'));
  const text = (await http(`${gw.url}/metrics`)).text;
  const value = (series: string): number | undefined => {
    const row = text.split('\n').find((l) => l.startsWith(series + ' '));
    return row === undefined ? undefined : Number(row.slice(series.length + 1));
  };
  assert.ok((value('magma_gateway_inputs_total{agent="lab",route="main",backend="lab"}') ?? 0) >= 2);
  assert.ok((value('magma_gateway_candidates_total{agent="lab",route="main",backend="lab",status="completed"}') ?? 0) >= 3);
  assert.equal(value('magma_gateway_inputs_total{agent="ab-kitchen",route="main",backend="lab"}'), undefined);
  assert.equal(value('magma_gateway_candidate_errors_total{agent="ab-kitchen",backend="kitchen",code="gateway_backend_timeout"}'), 0);
  assert.ok((value('magma_gateway_http_requests_total{endpoint="/agents/:agent/v1/responses",status_code="200",client="anonymous"}') ?? 0) >= 1);
  assert.ok((value('magma_gateway_http_requests_total{endpoint="/agents/:agent/v1/responses",status_code="404",client="anonymous"}') ?? 0) >= 1);
  assert.ok(!text.includes('nobody'), 'a request for an unknown agent creates no series');
});

test('GET /gateway/routes lists each virtual agent with its own routes', async () => {
  const res = await http(`${gw.adminUrl}/gateway/routes`);
  assert.equal(res.status, 200);
  const view = res.json as { routes: { name: string }[]; agents: { name: string; path: string; agent_id: string; memory_key: string; routes: { name: string; members: { backend: string }[] }[] }[] };
  assert.deepEqual(view.routes.map((r) => r.name), ['default']);
  assert.deepEqual(
    view.agents.map((a) => [a.name, a.path, a.agent_id, a.memory_key, a.routes.map((r) => `${r.name}:${r.members.map((m) => m.backend).join('+')}`)]),
    [
      ['ab-kitchen', '/agents/ab-kitchen/', 'kitchen-ab', '_gw_kitchen', ['main:kitchen']],
      ['lab', '/agents/lab/', 'lab', '_gateway', ['main:lab']],
    ],
  );
});

test('coaching through a virtual agent reaches that agent\'s coaching backend', async () => {
  const put = await http(`${gw.url}/agents/ab-kitchen/v1/coaching/sessions/run-1`, { method: 'PUT', body: { config: {} } });
  assert.equal(put.status, 204, put.text);
  assert.equal(kitchen.requestsTo('/v1/coaching/sessions/run-1').length, 1);
  const none = await http(`${gw.url}/agents/lab/v1/coaching/sessions/run-1`, { method: 'PUT', body: { config: {} } });
  assert.equal(none.status, 503, 'the lab agent reaches no coaching backend');
  const unknown = await http(`${gw.url}/agents/nope/v1/coaching/sessions/run-1`, { method: 'PUT', body: { config: {} } });
  assert.equal(unknown.status, 404);
  assert.equal((unknown.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
});

test('without top-level routes, / has no default agent: batches and /v1/info are 404, /health is the gateway\'s own', async () => {
  const a = await f.agent({ name: 'only' });
  const only = await f.gateway({
    probe_interval_s: 0.05,
    backends: { only: { url: a.url } },
    agents: { solo: { routes: [{ name: 'main', backend: 'only' }] } },
  });
  const body = JSON.stringify(batch('nd1'));
  const listened = await http(`${only.url}/v1/responses`, { method: 'POST', body });
  const injected = await injectBatch(only.app, { method: 'POST', url: '/v1/responses', payload: body });
  assert.deepEqual([listened.status, injected.statusCode], [404, 404]);
  assert.deepEqual(JSON.parse(injected.body), listened.json);
  assert.equal((listened.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
  assert.match((listened.json as { detail: string }).detail, /no default agent is configured/);
  assert.equal((await http(`${only.url}/v1/info`)).status, 404);
  a.setBehaviour({ health: 503 });
  await waitFor('agent solo not ready', async () => (await http(`${only.url}/agents/solo/health`)).status === 503);
  assert.deepEqual((await http(`${only.url}/health`)).json, { status: 'ready' }, 'the gateway is ready although the agent solo is not');
  a.setBehaviour({});
  await waitFor('agent solo ready again', async () => (await http(`${only.url}/agents/solo/health`)).status === 200);
  const served = await http(`${only.url}/agents/solo/v1/responses`, { method: 'POST', body });
  assert.equal(served.status, 200, served.text);
});

test('a virtual agent\'s address passes the conformance probe, as BENCH would use it (trailing slash too)', async () => {
  for (const address of [`${gw.url}/agents/lab`, `${gw.url}/agents/ab-kitchen/`]) {
    const results = await runChecks(address, { timeoutMs: 5000 });
    assert.deepEqual(results.filter((r) => !r.ok), [], address);
    assert.ok(results.length > 5);
  }
});
