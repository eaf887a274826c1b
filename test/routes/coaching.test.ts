/**
 * The coaching endpoints through a real gateway in front of real loopback agents
 * (docs/protocol-fidelity.md#coaching; docs/routing.md#the-memory-key-and-stickiness and docs/operations.md#health-and-identity).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startFakeAgent, type FakeAgent, type FakeBehaviour } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const COACHING = { capabilities: { inference: true, coaching: true }, specialized_coaching: ['failure', 'format'] };

async function agent(name: string, behaviour: FakeBehaviour = { info: COACHING }): Promise<FakeAgent> {
  const a = await startFakeAgent({ name, behaviour });
  cleanup.push(() => a.close());
  return a;
}

async function gateway(config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(config);
  cleanup.push(() => gw.close());
  return gw;
}

/** Two backends a and b; `scenario: kitchen` inputs route to b, everything else to a. */
async function twoBackends(a: FakeAgent, b: FakeAgent, extra: Record<string, unknown> = {}): Promise<TestGateway> {
  return gateway({
    backends: { a: { url: a.url, ...extra }, b: { url: b.url, ...extra } },
    routes: [
      { name: 'kitchen', match: { 'attributes.scenario': 'kitchen' }, backend: 'b' },
      { name: 'default', backend: 'a', fallback: ['b'] },
    ],
  });
}

async function call(gw: TestGateway, method: string, path: string, body?: string): Promise<{ status: number; text: string; ct: string | null }> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  const res = await fetch(`${gw.url}${path}`, { method, headers, body });
  return { status: res.status, text: await res.text(), ct: res.headers.get('content-type') };
}

const tag = (backend: string, route = 'default'): Record<string, unknown> => ({ _gateway: { backend, route } });

/** A coaching request text; written by hand so the big integers are in it exactly as a client sends them. */
function coachingBody(runId: string, steps: Record<string, unknown>[], target: unknown): string {
  const trajectory = steps.map((s, i) => ({ step_id: `s${i}`, output: { say: 'x', tool_calls: [] }, error: null, ...s }));
  return JSON.stringify({
    run_id: runId,
    request_id: `coach-${runId}`,
    kind: 'failure',
    target_step_id: target,
    trajectory,
    reinjection_points: [{ id: 'p0' }],
  }).replace('"BIG"', '123456789012345678901234567890').replace('"FLOAT"', '2.50');
}

test('PUT and DELETE go to every coaching-capable backend and answer 204', async () => {
  const [a, b] = [await agent('a'), await agent('b')];
  const gw = await twoBackends(a, b);
  const put = await call(gw, 'PUT', '/v1/coaching/sessions/run%2F1', '{"budget": 3, "big": 123456789012345678901}');
  assert.equal(put.status, 204, put.text);
  for (const x of [a, b]) {
    const got = x.requestsTo('/v1/coaching/sessions/run%2F1');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.raw, '{"budget": 3, "big": 123456789012345678901}', 'the session config is forwarded unchanged');
  }
  const del = await call(gw, 'DELETE', '/v1/coaching/sessions/run%2F1');
  assert.equal(del.status, 204);
  for (const x of [a, b]) assert.deepEqual(x.requests.filter((r) => r.method === 'DELETE').map((r) => r.path), ['/v1/coaching/sessions/run%2F1']);
});

test('a failing backend: the worst status, with a detail naming every backend', async () => {
  const a = await agent('a');
  const b = await agent('b', { info: COACHING, coaching: { sessionStatus: 409 } });
  const c = await agent('c');
  const gw = await gateway({
    backends: { a: { url: a.url }, b: { url: b.url }, c: { url: c.url } },
    routes: [{ name: 'default', ensemble: { a: 1, b: 1, c: 1 } }],
  });
  const conflict = await call(gw, 'PUT', '/v1/coaching/sessions/r1', '{}');
  assert.equal(conflict.status, 409);
  const body = JSON.parse(conflict.text) as { detail: string; backends: { backend: string; status: number }[] };
  assert.match(body.detail, /failed on b \(409: /);
  assert.match(body.detail, /succeeded on a, c/);
  assert.deepEqual(body.backends.map((o) => [o.backend, o.status]), [['a', 204], ['b', 409], ['c', 204]]);

  c.kill(); // still "ready" for the gateway (no probe since): the connection is refused, a 502 beats the 409
  const worse = await call(gw, 'PUT', '/v1/coaching/sessions/r2', '{}');
  assert.equal(worse.status, 502);
  assert.match((JSON.parse(worse.text) as { detail: string }).detail, /b \(409.*c \(502: cannot connect/);
});

test('a capability mix: sessions go only to the coaching backend, and /v1/info says why coaching is off', async () => {
  const a = await agent('a');
  const b = await agent('b', {});
  const gw = await twoBackends(a, b);
  assert.equal((await call(gw, 'PUT', '/v1/coaching/sessions/r', '{}')).status, 204);
  assert.equal(a.requestsTo('/v1/coaching/sessions/r').length, 1);
  assert.equal(b.requestsTo('/v1/coaching/sessions/r').length, 0);
  const info = JSON.parse((await call(gw, 'GET', '/v1/info')).text) as Record<string, unknown>;
  assert.deepEqual(info.capabilities, { inference: true, coaching: false });
  assert.match(String(info.coaching_unavailable_reason), /\bb does not/);
});

test('no coaching-capable backend: 503 with a detail', async () => {
  const a = await agent('a', {});
  const gw = await gateway(oneBackend({ a }));
  for (const [m, p, body] of [['PUT', '/v1/coaching/sessions/r', '{}'], ['POST', '/v1/coaching', coachingBody('r', [{ input: mkInput(1) }], 's0')]] as const) {
    const res = await call(gw, m, p, body);
    assert.equal(res.status, 503);
    assert.deepEqual(JSON.parse(res.text), { detail: 'no coaching-capable backend', code: 'GATEWAY_ERR_COACHING_UNAVAILABLE' });
  }
});

test('POST /v1/coaching goes to the tagged backend of the target step, tags stripped, numbers exact, answer unchanged', async () => {
  const reply: FakeBehaviour['coaching'] = {
    requireSession: false,
    response: (body) => ({ request_id: body.request_id, status: 'corrected', proposals: [], reason: 'é ✓ "quoted"', logs: [{ n: 1.5 }] }),
  };
  const a = await agent('a', { info: COACHING, coaching: reply });
  const b = await agent('b', { info: COACHING, coaching: reply });
  const gw = await twoBackends(a, b);
  const steps = [
    { input: mkInput(3, { memory: { big: 'BIG' } }) },
    { input: mkInput(3, { memory: { ...tag('b'), n: 'FLOAT' } }), output: { memory: tag('b') } },
    { input: mkInput(3, { memory: tag('a') }) },
  ];
  const text = coachingBody('r', steps, 's1');
  const res = await call(gw, 'POST', '/v1/coaching', text);
  assert.equal(res.status, 200, res.text);
  assert.equal(a.requestsTo('/v1/coaching').length, 0, 'the last step is tagged a, but s1 is the target');
  const got = b.requestsTo('/v1/coaching');
  assert.equal(got.length, 1);
  assert.ok(!got[0]!.raw.includes('_gateway'), got[0]!.raw);
  assert.ok(got[0]!.raw.includes('"big":123456789012345678901234567890'));
  assert.ok(got[0]!.raw.includes('"n":2.50'));
  assert.equal(got[0]!.raw, text.replace(/"_gateway":\{[^}]*\},?/g, '').replace(/,\}/g, '}'), 'nothing else changes');
  // The backend's own answer to what it received, byte for byte.
  const direct = await fetch(`${b.url}/v1/coaching`, { method: 'POST', body: got[0]!.raw, headers: { 'content-type': 'application/json' } });
  assert.equal(res.text, await direct.text());
  assert.equal(res.ct, direct.headers.get('content-type'));

  // An unknown target_step_id: the last step, tagged a.
  assert.equal((await call(gw, 'POST', '/v1/coaching', coachingBody('r', steps, 'nope'))).status, 200);
  assert.equal(a.requestsTo('/v1/coaching').length, 1);
});

test('an untagged target step is routed by the rules, and non-200 answers pass through', async () => {
  const a = await agent('a');
  const b = await agent('b');
  const gw = await twoBackends(a, b);
  const kitchen = mkInput(1, { attributes: { scenario: 'kitchen' } });
  const res = await call(gw, 'POST', '/v1/coaching', coachingBody('none', [{ input: kitchen }], 0));
  assert.equal(res.status, 404, 'no session on b: its 404 is passed back');
  assert.match(res.text, /unknown coaching session none/);
  assert.equal(b.requestsTo('/v1/coaching').length, 1);
  await call(gw, 'POST', '/v1/coaching', coachingBody('none', [{ input: mkInput(1) }], 0));
  assert.equal(a.requestsTo('/v1/coaching').length, 1);
});

test('a session lives on one replica: PUT and POST reach the same one', async () => {
  const [a1, a2] = [await agent('a1'), await agent('a2')];
  const gw = await gateway(oneBackend({ a: { urls: [a1.url, a2.url] } }));
  for (const run of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']) {
    assert.equal((await call(gw, 'PUT', `/v1/coaching/sessions/${run}`, '{}')).status, 204);
    const holders = [a1, a2].filter((x) => x.requestsTo(`/v1/coaching/sessions/${run}`).length > 0);
    assert.equal(holders.length, 1, 'one replica per backend');
    const res = await call(gw, 'POST', '/v1/coaching', coachingBody(run, [{ input: mkInput(1, { memory: tag('a') }) }], 's0'));
    assert.equal(res.status, 200, `${run}: ${res.text}`);
    assert.equal(holders[0]!.requests.filter((r) => r.path === '/v1/coaching' && (r.body as { run_id: string }).run_id === run).length, 1);
  }
});

test('backend failures: timeout is 504, unreachable is 502; a body without a step input is 422', async () => {
  const slow = await agent('slow', { info: COACHING, delayMs: 2000, coaching: { requireSession: false } });
  const gone = await agent('gone');
  const gw = await gateway({
    backends: { slow: { url: slow.url, timeout_s: 0.2 }, gone: { url: gone.url } },
    routes: [{ name: 'gone', match: { 'attributes.x': 1 }, backend: 'gone' }, { name: 'default', backend: 'slow' }],
  });
  const timeout = await call(gw, 'POST', '/v1/coaching', coachingBody('r', [{ input: mkInput(1) }], 's0'));
  assert.equal(timeout.status, 504);
  assert.match(timeout.text, /backend slow: no complete answer within 200 ms \(timeout_s\)/);
  gone.kill();
  const down = await call(gw, 'POST', '/v1/coaching', coachingBody('r', [{ input: mkInput(1, { attributes: { x: 1 } }) }], 's0'));
  assert.equal(down.status, 502);
  assert.match(down.text, /backend gone: cannot connect/);
  for (const bad of ['{"run_id": "r", "trajectory": []}', '{"run_id": ', '[1]']) {
    const res = await call(gw, 'POST', '/v1/coaching', bad);
    assert.equal(res.status, 422, bad);
    assert.equal((JSON.parse(res.text) as { detail: { loc: unknown[] }[] }).detail[0]!.loc[0], 'body');
  }
});

test('a coaching body nested deeper than server.max_json_depth is 422 naming the key, and the gateway keeps serving', async () => {
  const a = await agent('a', { info: COACHING, coaching: { requireSession: false } });
  const gw = await gateway(oneBackend({ a }, { server: { max_json_depth: 64 } }));
  const deep = '{"x":'.repeat(10_000) + '1' + '}'.repeat(10_000);
  for (const body of [
    coachingBody('deep', [{ input: mkInput(1, { memory: { d: 'DEEP' } }) }], 's0').replace('"DEEP"', deep),
    `{"run_id":"r","trajectory":${'['.repeat(100_000)}`,
  ]) {
    const res = await call(gw, 'POST', '/v1/coaching', body);
    assert.equal(res.status, 422, res.text.slice(0, 200));
    const detail = (JSON.parse(res.text) as { detail: { type: string; loc: unknown[]; msg: string }[] }).detail;
    assert.deepEqual(detail.map((d) => [d.type, d.loc]), [['json_invalid', ['body']]]);
    assert.match(detail[0]!.msg, /deeper than 64 levels \(server\.max_json_depth\)/);
  }
  assert.equal(a.requestsTo('/v1/coaching').length, 0);
  const fine = await call(gw, 'POST', '/v1/coaching', coachingBody('ok', [{ input: mkInput(1) }], 's0'));
  assert.equal(fine.status, 200, fine.text);
});

test('an endless coaching answer is cut at max_response_mb: 502 naming the key, the gateway keeps serving', async () => {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') return void res.end('{"status":"ready"}');
      if (req.url === '/v1/info') {
        return void res.end(JSON.stringify({ protocol_version: '2.0', agent_id: 'raw', agent_version: '1', ...COACHING }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = (): void => {
        while (!res.destroyed) if (!res.write(chunk)) return void res.once('drain', pump);
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const port = (server.address() as { port: number }).port;
  const gw = await gateway(oneBackend({ raw: { url: `http://127.0.0.1:${port}`, max_response_mb: 1 } }));
  for (let i = 0; i < 3; i++) {
    const res = await call(gw, 'POST', '/v1/coaching', coachingBody(`r${i}`, [{ input: mkInput(1) }], 's0'));
    assert.equal(res.status, 502);
    assert.match(res.text, /larger than 1048576 bytes \(backends\.raw\.max_response_mb\)/);
  }
  assert.equal((await fetch(`${gw.url}/v1/info`)).status, 200);
});
