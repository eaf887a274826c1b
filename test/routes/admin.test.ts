/**
 * The operator API on the admin listener against real loopback agents: the backends/routes/config views and the
 * index, redaction, the bearer token on every admin request (and /metrics when asked), not served on the agent
 * port, refused beyond loopback without a token, 405 with Allow, and the passthrough.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { REDACTED, redactConfig } from '../../src/admin/redact.js';
import type { BackendView, RouteView } from '../../src/admin/views.js';
import { buildApp } from '../../src/app.js';
import { ConfigError, loadConfigFile, parseConfigText } from '../../src/config/load.js';
import { reloadGateway } from '../../src/reload.js';
import { configFile, http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { mkInput, type TestGateway, withTestDefaults } from '../helpers/gateway.js';
import { oneBackend, useFixtures, type Fixtures } from '../helpers/fixtures.js';
import { injectBatch } from '../helpers/inject.js';

const TOKEN = 's3cret-admin-token';

/** A gateway probing every 0.1 s, so replica states follow the agents quickly. */
function gateway(f: Fixtures, config: Record<string, unknown>): Promise<TestGateway> {
  return f.gateway({ probe_interval_s: 0.1, ...config });
}

const auth = { authorization: `Bearer ${TOKEN}` };

test('GET /gateway/backends and /gateway/routes show replicas, probes, in-flight work and readiness', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await gateway(f, {
    backends: { a: { url: a.url }, gone: { url: 'http://127.0.0.1:9', timeout_s: 7 } },
    routes: [{ name: 'side', match: { 'extra_keys.side': true }, backend: 'gone' }, { name: 'default', backend: 'a', fallback: ['gone'] }],
  });
  a.setBehaviour((r) => (r.path === '/v1/responses' ? { delayMs: 300 } : {}));
  const slow = gw.post({ request_id: 'slow', inputs: [mkInput(1), mkInput(2)] });
  let seen: BackendView[] = [];
  await waitFor('a batch in flight', async () => {
    seen = ((await http(`${gw.adminUrl}/gateway/backends`)).json as { backends: BackendView[] }).backends;
    return seen[0]!.replicas[0]!.in_flight.requests === 1;
  });
  assert.equal((await slow).status, 200);
  const [ra] = seen[0]!.replicas;
  assert.deepEqual(
    { id: ra!.id, url: ra!.url, state: ra!.state, routable: ra!.routable, inputs: ra!.in_flight.inputs, err: ra!.last_error },
    { id: 'a#0', url: a.url, state: 'ready', routable: true, inputs: 2, err: null },
  );
  assert.equal(ra!.last_probe?.ok, true);
  assert.equal(ra!.info?.agent_id, 'fake-a');
  const gone = seen[1]!;
  assert.deepEqual([gone.name, gone.ready, gone.timeout_s, gone.routes], ['gone', false, 7, ['side', 'default']]);
  assert.equal(gone.replicas[0]!.state, 'not_ready');
  assert.match(gone.replicas[0]!.last_probe?.error ?? '', /health/);

  const routes = ((await http(`${gw.adminUrl}/gateway/routes`)).json as { routes: RouteView[] }).routes;
  assert.deepEqual(routes.map((r) => [r.name, r.kind, r.ready, r.backends]), [
    ['side', 'backend', false, [{ name: 'gone', ready: false }]],
    ['default', 'backend', true, [{ name: 'a', ready: true }, { name: 'gone', ready: false }]],
  ]);
});

test('GET /gateway/config redacts the admin token, backend header values and URL passwords', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'c' });
  const secretUrl = a.url.replace('http://', 'http://user:url-password@');
  const gw = await gateway(f, oneBackend({ c: { url: secretUrl, headers: { 'x-api-key': 'header-secret' } } }, { admin: { token: TOKEN } }));
  const res = await http(`${gw.adminUrl}/gateway/config`, { headers: auth });
  assert.equal(res.status, 200);
  for (const secret of [TOKEN, 'header-secret', 'url-password']) assert.ok(!res.text.includes(secret), secret);
  const { config } = res.json as { config: { admin: { token: string }; backends: { c: { headers: object; urls: string[] } } } };
  assert.equal(config.admin.token, REDACTED);
  assert.deepEqual(config.backends.c.headers, { 'x-api-key': REDACTED });
  assert.equal(config.backends.c.urls[0], a.url.replace('http://', `http://user:${REDACTED}@`));
  assert.ok(!(await http(`${gw.adminUrl}/gateway/backends`, { headers: auth })).text.includes('url-password'));

  // The Redis URL's password and secret-looking Redis options (no Redis is started for this).
  const withRedis = parseConfigText(
    stringify(oneBackend({ c: a }, { state: { redis: { url: 'redis://:redis-pass@10.0.0.1:6379/0', options: { sentinelPassword: 'p2', db: 1 } } } })),
    't.yaml',
    {},
  );
  const red = redactConfig(withRedis);
  assert.equal(red.state.redis?.url, `redis://:${REDACTED}@10.0.0.1:6379/0`);
  assert.deepEqual(red.state.redis?.options, { sentinelPassword: REDACTED, db: 1 });
  assert.equal(withRedis.state.redis?.url, 'redis://:redis-pass@10.0.0.1:6379/0', 'the running config is untouched');
});

test('GET /gateway/config shows each client\'s name and limits, never its key', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'k' });
  const gw = await gateway(f, oneBackend({ k: a }, {
    admin: { token: TOKEN },
    clients: { 'team-a': { key: 'client-key-a-0123456789', max_batches_in_flight: 2 }, 'team-b': { key: 'client-key-b-0123456789' } },
  }));
  const res = await http(`${gw.adminUrl}/gateway/config`, { headers: auth });
  assert.equal(res.status, 200);
  assert.ok(!res.text.includes('client-key-'), res.text);
  const { config } = res.json as { config: { clients: Record<string, unknown> } };
  assert.deepEqual(config.clients, {
    'team-a': { key: REDACTED, max_batches_in_flight: 2, max_wait_s: 30 },
    'team-b': { key: REDACTED, max_wait_s: 30 },
  });
  assert.equal(gw.app.gateway.current.config.clients?.['team-a']?.key, 'client-key-a-0123456789', 'the running config is untouched');
});

test('the admin token guards every path of the admin listener (and /metrics when asked); missing and wrong look alike', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 't' });
  const config = (protect: boolean) =>
    parseConfigText(
      stringify(oneBackend({ t: a }, { admin: { listen: '127.0.0.1:0', token: '${GATEWAY_ADMIN_TOKEN}', protect_metrics: protect } })),
      't.yaml',
      { GATEWAY_ADMIN_TOKEN: TOKEN },
    );
  const app = await buildApp({ config: config(false), logger: false, defaultMetrics: false });
  f.defer(() => app.close());
  const admin = app.adminApp!;
  // A route another plugin adds later to the admin listener is covered without knowing about the auth plugin.
  admin.get('/gateway/other-plugin', async () => ({ secret: 'data' }));
  await app.ready();
  const get = (url: string, headers: Record<string, string> = {}) => admin.inject({ method: 'GET', url, headers });

  for (const url of ['/gateway/', '/gateway/backends', '/gateway/routes', '/gateway/config', '/gateway/experiments',
    '/gateway/other-plugin', '/gateway/backends/t/health', '/gateway/nope', '/%67ateway/backends', '/GATEWAY/backends', '/metrics',
    '/gateway/overview', '/gateway/batches', '/gateway/experiments/history', '/app.js/../gateway/backends', '/nope.js']) {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }];
    for (const headers of attempts) {
      const res = await get(url, headers);
      assert.equal(res.statusCode, 401, `${url} ${JSON.stringify(headers)}`);
      assert.deepEqual(res.json(), { detail: 'unauthorized', code: 'GATEWAY_ERR_UNAUTHORIZED' });
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="magma-gateway"');
    }
  }
  // The console's page and assets hold no data: open on GET and HEAD, only at their own paths (docs/console.md).
  for (const url of ['/', '/index.html', '/app.js', '/style.css']) {
    assert.equal((await get(url)).statusCode, 200, url);
    assert.equal((await admin.inject({ method: 'HEAD', url })).statusCode, 200, `HEAD ${url}`);
  }
  assert.equal((await admin.inject({ method: 'POST', url: '/' })).statusCode, 401, 'POST / is not the page');
  const posted = await admin.inject({ method: 'POST', url: '/gateway/reload' });
  assert.equal(posted.statusCode, 401);
  assert.equal(a.requestsTo('/health').length, 1, 'the passthrough never reached the agent (only the start probe did)');

  assert.equal((await get('/gateway/backends', auth)).statusCode, 200);
  assert.equal((await get('/gateway/other-plugin', { authorization: `bearer ${TOKEN}` })).statusCode, 200);
  assert.equal((await get('/gateway/nope', auth)).statusCode, 404);
  // The agent port: contract endpoints open, admin paths not served there at all (with or without the token).
  for (const open of ['/health', '/v1/info', '/metrics']) assert.equal((await app.inject({ method: 'GET', url: open })).statusCode, 200, open);
  for (const url of ['/gateway/', '/gateway/backends', '/gateway/config', '/gateway/experiments', '/gateway/backends/t/health']) {
    assert.equal((await app.inject({ method: 'GET', url, headers: auth })).statusCode, 404, url);
  }
  assert.equal((await app.inject({ method: 'POST', url: '/gateway/reload', headers: auth })).statusCode, 404);
  const batch = await injectBatch(app, { method: 'POST', url: '/v1/responses', payload: { request_id: 'r', inputs: [mkInput(1)] } });
  assert.equal(batch.statusCode, 200);

  const strict = await buildApp({ config: config(true), logger: false, defaultMetrics: false });
  f.defer(() => strict.close());
  assert.equal((await strict.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
  assert.equal((await strict.inject({ method: 'GET', url: '/%6detrics' })).statusCode, 401);
  assert.equal((await strict.inject({ method: 'GET', url: '/metrics', headers: auth })).statusCode, 200);
  assert.equal((await strict.inject({ method: 'GET', url: '/health' })).statusCode, 200);
});

test('without admin.listen the admin API and the passthrough are not served anywhere', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'n' });
  const gw = await f.gateway(oneBackend({ n: a }), { admin: false });
  assert.equal(gw.app.adminApp, null);
  assert.equal(gw.adminUrl, '');
  for (const [method, path] of [['GET', '/gateway/'], ['GET', '/gateway/backends'], ['GET', '/gateway/config'], ['POST', '/gateway/reload'],
    ['GET', '/gateway/experiments'], ['GET', '/gateway/backends/n/health'], ['POST', '/gateway/backends/n/v1/responses']] as const) {
    const res = await http(`${gw.url}${path}`, { method });
    assert.equal(res.status, 404, `${method} ${path}`);
  }
  assert.equal(a.requestsTo('/health').length, 1, 'nothing was passed through to the agent (only the start probe)');
  assert.equal((await http(`${gw.url}/health`)).status, 200);
  assert.equal((await http(`${gw.url}/metrics`)).status, 200);
});

test('admin.listen beyond loopback without a non-empty admin.token is refused at start, naming the key', () => {
  const base = oneBackend({ x: 'http://127.0.0.1:9' });
  const load = (admin: Record<string, unknown>, env: Record<string, string> = {}) =>
    parseConfigText(stringify({ ...base, admin }), 'gw.yaml', env);
  for (const admin of [{ listen: '0.0.0.0:9901' }, { listen: '0.0.0.0:9901', token: '' }, { listen: '[::]:9901' },
    { listen: '10.1.2.3:9901', token: '${T:-}' }]) {
    assert.throws(() => load(admin), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, /admin\.listen: .*admin\.token/);
      return true;
    }, JSON.stringify(admin));
  }
  assert.throws(() => load({ listen: 'nonsense' }), /admin\.listen: expected "host:port"/);
  assert.equal(load({ listen: '0.0.0.0:9901', token: TOKEN }).admin.listen, '0.0.0.0:9901');
  assert.equal(load({ listen: '127.0.0.1:9901' }).admin.token, undefined, 'loopback needs no token');
  assert.equal(load({ listen: '[::1]:9901' }).admin.listen, '[::1]:9901');
  assert.equal(load({ listen: 'localhost:0' }).admin.listen, 'localhost:0');
});

test('GET /gateway/ lists the admin endpoints, each served on the admin listener', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'i' });
  const gw = await gateway(f, oneBackend({ i: a }, { admin: { token: TOKEN } }));
  for (const path of ['/gateway/', '/gateway']) {
    const res = await http(`${gw.adminUrl}${path}`, { headers: auth });
    assert.equal(res.status, 200, path);
    const { endpoints } = res.json as { endpoints: { method: string; path: string; what: string }[] };
    assert.deepEqual(endpoints.map((e) => `${e.method} ${e.path}`), [
      'GET /gateway/backends', 'GET /gateway/routes', 'GET /gateway/config', 'POST /gateway/reload', 'GET /gateway/experiments',
      'GET /gateway/experiments/history', 'GET /gateway/overview', 'GET /gateway/batches',
      'POST /gateway/experiments/outcomes', 'POST /gateway/experiments/reset', 'GET /gateway/experiments/trajectories',
      'DELETE /gateway/cache', 'ANY /gateway/backends/{name}/...',
    ]);
    assert.ok(endpoints.every((e) => e.what.length > 0));
  }
  for (const path of ['/gateway/backends', '/gateway/routes', '/gateway/config', '/gateway/experiments', '/gateway/backends/i/health',
    '/gateway/experiments/history', '/gateway/overview', '/gateway/batches', '/gateway/experiments/trajectories']) {
    assert.equal((await http(`${gw.adminUrl}${path}`, { headers: auth })).status, 200, path);
  }
});

test('a wrong method on a known path is 405 with Allow and a JSON detail, on both listeners; unknown paths 404', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'm' });
  const gw = await gateway(f, oneBackend({ m: a }));
  const cases: [string, string, string][] = [
    [gw.url, 'GET /v1/responses', 'POST'],
    [gw.url, 'PUT /v1/responses', 'POST'],
    [gw.url, 'POST /health', 'GET, HEAD'],
    [gw.url, 'DELETE /v1/info', 'GET, HEAD'],
    [gw.url, 'POST /metrics', 'GET, HEAD'],
    [gw.url, 'GET /v1/coaching', 'POST'],
    [gw.url, 'POST /v1/coaching/sessions/run-1', 'DELETE, PUT'],
    [gw.adminUrl, 'GET /gateway/reload', 'POST'],
    [gw.adminUrl, 'DELETE /gateway/backends', 'GET, HEAD'],
  ];
  for (const [base, line, allow] of cases) {
    const [method, path] = line.split(' ') as [string, string];
    const res = await http(`${base}${path}?q=1`, { method });
    assert.equal(res.status, 405, line);
    assert.equal(res.headers.get('allow'), allow, line);
    assert.deepEqual(
      res.json,
      { detail: `Method Not Allowed: ${method} ${path} (allowed: ${allow})`, code: 'GATEWAY_ERR_METHOD_NOT_ALLOWED' },
      line,
    );
  }
  for (const [base, path] of [[gw.url, '/v1/responsesX'], [gw.url, '/v1/coaching/sessions'], [gw.adminUrl, '/gateway/nope']] as const) {
    const res = await http(`${base}${path}`);
    assert.equal(res.status, 404, path);
    assert.equal(res.headers.get('allow'), null);
  }
});

test('/gateway/backends shows last_error while a replica fails, and clears it once the replica is ready again', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'r' });
  const gw = await gateway(f, oneBackend({ r: a }));
  const replica = async (): Promise<BackendView['replicas'][number]> =>
    ((await http(`${gw.adminUrl}/gateway/backends`)).json as { backends: BackendView[] }).backends[0]!.replicas[0]!;
  a.setBehaviour({ health: 503 });
  await waitFor('the replica not ready', async () => (await replica()).state === 'not_ready');
  assert.match((await replica()).last_error ?? '', /503|not ready|health/);
  a.setBehaviour({});
  await waitFor('the replica ready again', async () => (await replica()).state === 'ready');
  const back = await replica();
  assert.equal(back.last_error, null, 'no stale error on a ready replica');
  assert.equal(back.consecutive_failures, 0);
});

/** A plain HTTP backend mounted under /agent that echoes what it received (path, query, headers, body). */
async function echoServer(f: Fixtures): Promise<{ url: string; seen: { url: string; headers: IncomingHttpHeaders; body: string }[] }> {
  const seen: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const { url } = await f.server((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/agent/health') res.end('{"status":"ready"}');
      else if (req.url === '/agent/v1/info') {
        res.end(JSON.stringify({ protocol_version: '2.0', agent_id: 'echo', agent_version: '1', capabilities: { inference: true } }));
      } else {
        seen.push({ url: req.url ?? '', headers: req.headers, body });
        res.writeHead(201, { 'content-type': 'text/plain', 'x-from-agent': 'yes' }).end(`echo ${req.method} ${req.url}`);
      }
    });
  });
  return { url: `${url}/agent`, seen };
}

test('/gateway/backends/{name}/... forwards to a replica: prefix stripped, body exact, admin token not forwarded', async (t) => {
  const f = useFixtures(t);
  const echo = await echoServer(f);
  const [p0, p1] = [await f.agent({ name: 'p0' }), await f.agent({ name: 'p1' })];
  const gw = await gateway(f, oneBackend(
    { echo: { url: echo.url, headers: { 'x-api-key': 'backend-key' } }, pool: { urls: [p0.url, p1.url] } },
    { admin: { token: TOKEN }, route: { fallback: ['pool'] } },
  ));
  const body = '{"n": 123456789012345678901234567890, "x": 1.50}';
  const res = await http(`${gw.adminUrl}/gateway/backends/echo/some/path?q=1&r=two`, {
    method: 'POST', body, headers: { ...auth, 'content-type': 'application/json', 'x-request-id': 'rid-7' },
  });
  assert.equal(res.status, 201);
  assert.equal(res.text, 'echo POST /agent/some/path?q=1&r=two');
  assert.equal(res.headers.get('x-from-agent'), 'yes');
  assert.equal(res.headers.get('x-gateway-replica'), 'echo#0');
  const got = echo.seen[0]!;
  assert.equal(got.body, body, 'the body reaches the agent byte for byte');
  assert.equal(got.headers.authorization, undefined, 'the admin token stays at the gateway');
  assert.equal(got.headers['x-api-key'], 'backend-key');
  assert.equal(got.headers['x-request-id'], 'rid-7');

  const info = await http(`${gw.adminUrl}/gateway/backends/pool/v1/info`, { headers: auth });
  assert.equal((info.json as { agent_id: string }).agent_id.startsWith('fake-p'), true);
  const served = new Set<string | null>();
  for (let i = 0; i < 4; i++) served.add((await http(`${gw.adminUrl}/gateway/backends/pool/health`, { headers: auth })).headers.get('x-gateway-replica'));
  assert.deepEqual(served, new Set(['pool#0', 'pool#1']), 'ready replicas take turns');

  const poolStates = async (): Promise<string[]> =>
    ((await http(`${gw.adminUrl}/gateway/backends`, { headers: auth })).json as { backends: BackendView[] }).backends[1]!.replicas.map((r) => r.state);
  p1.setBehaviour({ health: 503 });
  await waitFor('pool#1 not ready', async () => (await poolStates())[1] === 'not_ready');
  const pin = { ...auth, 'x-gateway-replica': '1', 'x-request-id': 'pinned' };
  const pinned = await http(`${gw.adminUrl}/gateway/backends/pool/health`, { headers: pin });
  assert.deepEqual([pinned.status, pinned.json], [503, { detail: 'not ready' }], "a pinned replica's own answer");
  const proxied = p1.requestsTo('/health').filter((r) => r.headers['x-request-id'] === 'pinned');
  assert.equal(proxied.length, 1, 'a 503 is passed through, not retried');
  assert.equal(proxied[0]!.headers['x-gateway-replica'], undefined, 'the pin header stays at the gateway');

  const unknown = await http(`${gw.adminUrl}/gateway/backends/nope/health`, { headers: auth });
  assert.deepEqual([unknown.status, unknown.json], [404, { detail: 'unknown backend "nope"', code: 'GATEWAY_ERR_NOT_FOUND' }]);
  p0.setBehaviour({ health: 503 });
  await waitFor('pool has no ready replica', async () => (await poolStates())[0] === 'not_ready');
  const none = await http(`${gw.adminUrl}/gateway/backends/pool/v1/info`, { headers: auth });
  assert.deepEqual([none.status, none.json], [503, { detail: 'backend "pool" has no ready replica', code: 'GATEWAY_ERR_NO_READY_REPLICA' }]);
  p0.kill();
  const dead = await http(`${gw.adminUrl}/gateway/backends/pool/health`, { headers: { ...auth, 'x-gateway-replica': '0' } });
  assert.equal(dead.status, 502);
  assert.match((dead.json as { detail: string }).detail, /pool#0/);
});

test('a reload keeps admin.listen until a restart, and refuses a file that would leave it open without a token', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'k' });
  const base = withTestDefaults(oneBackend({ k: a }), false);
  const file = configFile({ ...base, admin: { listen: '0.0.0.0:9901', token: TOKEN } });
  f.defer(() => file.remove());
  // Built, never listening: the refusal is decided on the config, no socket beyond loopback is opened here.
  const app = await buildApp({ config: loadConfigFile(file.path, {}), configPath: file.path, logger: false, defaultMetrics: false });
  f.defer(() => app.close());
  await app.ready();

  file.write({ ...base, admin: { listen: '127.0.0.1:9901' } });
  const refused = await reloadGateway(app, 'api');
  assert.ok(!refused.ok);
  assert.equal(refused.status, 400);
  assert.match(refused.detail, /admin\.token: the admin listener on 0\.0\.0\.0:9901 stays until a restart/);
  assert.equal(app.gateway.current.config.admin.token, TOKEN, 'the running config keeps serving');

  file.write({ ...base, admin: { listen: '127.0.0.1:9901', token: 'next-token' } });
  const kept = await reloadGateway(app, 'api');
  assert.ok(kept.ok);
  assert.deepEqual(kept.report.restart_required, ['admin.listen: 127.0.0.1:9901 in the file, 0.0.0.0:9901 until a restart']);
  assert.equal(app.gateway.current.config.admin.listen, '0.0.0.0:9901');
  assert.equal(app.gateway.current.config.admin.token, 'next-token', 'the token changes at once');
});
