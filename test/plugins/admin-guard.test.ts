/**
 * The admin listener's Host and Origin rules (src/plugins/admin-guard.ts, docs/operations.md#admin-security): the
 * decision alone, then over real HTTP against a gateway with loopback agents, with and without a token. The
 * browser's own view of them is test/console/admin-origin.test.ts.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { refusal, hostName, type RequestFacts, type ServedHosts } from '../../src/plugins/admin-guard.js';
import { useFixtures } from '../helpers/fixtures.js';

const SERVED: ServedHosts = { listenHost: '127.0.0.1', localAddress: '127.0.0.1', allowed: ['admin.internal'] };

function facts(over: Partial<RequestFacts>): RequestFacts {
  return { method: 'GET', host: '127.0.0.1:9901', origin: undefined, fetchSite: undefined, contentType: undefined, hasBody: false, passthrough: false, ...over };
}

test('Host: the listener\'s address, loopback names and admin.allowed_hosts are served; any other name is 421', () => {
  for (const host of ['127.0.0.1:9901', '127.0.0.1', 'localhost:9901', 'LOCALHOST.', 'app.localhost:1', '[::1]:9901', '127.8.9.10', 'admin.internal:9901', 'Admin.Internal']) {
    assert.equal(refusal(facts({ host }), SERVED), undefined, host);
  }
  for (const host of ['evil.example', 'evil.example:9901', '127.0.0.1.evil.example', 'localhost.evil.example', '10.0.0.5:9901', 'a b', '', 'x:y:z']) {
    assert.equal(refusal(facts({ host }), SERVED)?.status, 421, host);
  }
  // Bound to every interface: the address a connection arrived on is the listener's own.
  assert.equal(refusal(facts({ host: '10.0.0.5:9901' }), { listenHost: '0.0.0.0', localAddress: '::ffff:10.0.0.5', allowed: [] }), undefined);
  // An HTTP/1.0 request without Host comes from no browser.
  assert.equal(refusal(facts({ host: undefined }), SERVED), undefined);
  assert.equal(hostName('[FD00::5]:80'), 'fd00::5');
});

test('a state-changing request: refused from another origin or site, needs JSON with a body; a script without Origin passes', () => {
  const post = (over: Partial<RequestFacts>): number | undefined => refusal(facts({ method: 'POST', hasBody: true, contentType: 'application/json', ...over }), SERVED)?.status;
  assert.equal(post({}), undefined, 'a CLI: no Origin, no Sec-Fetch-Site');
  assert.equal(post({ origin: 'http://127.0.0.1:9901', fetchSite: 'same-origin' }), undefined, 'the console itself');
  assert.equal(post({ contentType: 'Application/JSON; charset=utf-8' }), undefined);
  assert.equal(post({ hasBody: false, contentType: undefined }), undefined, 'no body: no content type needed');
  assert.equal(post({ origin: 'http://127.0.0.1:8080' }), 403, 'another port of the same host is another origin');
  assert.equal(post({ origin: 'http://localhost:9901' }), 403, 'another name for the host is another origin');
  assert.equal(post({ origin: 'null' }), 403);
  assert.equal(post({ origin: 'https://evil.example' }), 403);
  assert.equal(post({ fetchSite: 'same-site' }), 403);
  assert.equal(post({ fetchSite: 'cross-site' }), 403);
  assert.equal(post({ contentType: 'text/plain' }), 415);
  assert.equal(post({ contentType: undefined }), 415);
  assert.equal(post({ contentType: 'application/x-www-form-urlencoded' }), 415);
  for (const method of ['DELETE', 'PUT', 'PATCH', 'OPTIONS']) assert.equal(post({ method, origin: 'http://evil.example' }), 403, method);
  // Reads are not refused for their Origin (a browser cannot read them across origins: no CORS), but the passthrough is.
  assert.equal(refusal(facts({ origin: 'http://evil.example', fetchSite: 'cross-site' }), SERVED), undefined);
  assert.equal(refusal(facts({ fetchSite: 'same-site', passthrough: true }), SERVED)?.status, 403);
  assert.equal(refusal(facts({ passthrough: true }), SERVED), undefined);
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** node:http, since fetch will not send a made-up Host. */
function send(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const DATA_PATHS = ['/gateway/config', '/gateway/experiments', '/gateway/experiments/trajectories', '/gateway/experiments/trajectories?format=csv', '/gateway/backends', '/'];

test('Host: evil.example gets 421 and no data on every path, token or not; admin.allowed_hosts lets a name in after a reload', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const config = (admin: Record<string, unknown>): Record<string, unknown> => ({ admin, backends: { a: { url: a.url } }, routes: [{ name: 'ab', split: { a: 1 } }] });
  const gw = await f.fileGateway(config({}));
  for (const path of DATA_PATHS) {
    const res = await send(gw.adminUrl + path, { headers: { host: 'evil.example' } });
    assert.equal(res.status, 421, path);
    assert.deepEqual(JSON.parse(res.text), {
      detail: 'this admin listener does not serve Host "evil.example": use its address or a loopback name, or add the name to admin.allowed_hosts',
      code: 'GATEWAY_ERR_HOST_NOT_SERVED',
    });
    assert.equal((await send(gw.adminUrl + path, { headers: { host: `localhost:${new URL(gw.adminUrl).port}` } })).status, 200, `${path} from localhost`);
  }
  assert.equal((await send(`${gw.adminUrl}/gateway/reload`, { method: 'POST', headers: { host: 'evil.example' } })).status, 421);
  assert.equal(gw.app.gateway.current.config.admin.allowed_hosts.length, 0, 'no reload went through');

  const token = 'guard-test-token';
  assert.equal((await gw.reload(config({ token, allowed_hosts: ['admin.internal'] }))).status, 200);
  const auth = { authorization: `Bearer ${token}` };
  const evil = await send(`${gw.adminUrl}/gateway/config`, { headers: { host: 'evil.example', ...auth } });
  assert.equal(evil.status, 421, 'the right token does not make the name served');
  assert.ok(!evil.text.includes(a.url));
  const internal = await send(`${gw.adminUrl}/gateway/config`, { headers: { host: 'admin.internal:9901', ...auth } });
  assert.equal(internal.status, 200);
  assert.ok(internal.text.includes(a.url));
  assert.equal((await send(`${gw.adminUrl}/gateway/config`, { headers: { host: 'admin.internal' } })).status, 401, 'still the token after the Host');
});

test('POST, DELETE and the passthrough: another origin is 403, a non-JSON body 415, a script\'s POST passes; answers say nosniff with a CSP', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.fileGateway({ backends: { a: { url: a.url } }, routes: [{ name: 'ab', split: { a: 1 } }], cache: {} });
  const own = gw.adminUrl;
  const foreign = { origin: 'http://127.0.0.1:1' };
  const json = { 'content-type': 'application/json' };
  const cases: [string, string, Record<string, string>, string | undefined, number][] = [
    ['POST', '/gateway/experiments/reset', { ...json, ...foreign }, '{}', 403],
    ['POST', '/gateway/experiments/reset', { 'content-type': 'text/plain' }, '{}', 415],
    ['POST', '/gateway/experiments/reset', { ...json, 'sec-fetch-site': 'same-site' }, '{}', 403],
    ['POST', '/gateway/experiments/outcomes', { ...json, ...foreign }, '{"outcomes": []}', 403],
    ['POST', '/gateway/experiments/outcomes', { 'content-type': 'application/x-www-form-urlencoded' }, 'outcomes=1', 415],
    ['POST', '/gateway/reload', foreign, undefined, 403],
    ['DELETE', '/gateway/cache', foreign, undefined, 403],
    ['POST', '/gateway/backends/a/debug', { ...json, ...foreign }, '{}', 403],
    ['GET', '/gateway/backends/a/debug', { 'sec-fetch-site': 'cross-site' }, undefined, 403],
    ['POST', '/gateway/backends/a/debug', { 'content-type': 'text/plain' }, 'x', 415],
  ];
  for (const [method, path, headers, body, status] of cases) {
    const res = await send(own + path, { method, headers, body });
    assert.equal(res.status, status, `${method} ${path} ${JSON.stringify(headers)}: ${res.text}`);
  }
  assert.equal(a.requestsTo('/debug').length, 0, 'no refused passthrough reached the agent');
  assert.equal(gw.app.gateway.current.config.admin.allowed_hosts.length, 0);

  // What a CLI or a script sends: no Origin. The console's own origin passes as well.
  const reset = await send(`${own}/gateway/experiments/reset`, { method: 'POST', headers: json, body: '{}' });
  assert.equal(reset.status, 200, reset.text);
  assert.equal((await send(`${own}/gateway/experiments/reset`, { method: 'POST', headers: { ...json, origin: own, 'sec-fetch-site': 'same-origin' }, body: '{}' })).status, 200);
  assert.equal((await send(`${own}/gateway/reload`, { method: 'POST' })).status, 200);
  assert.equal((await send(`${own}/gateway/cache`, { method: 'DELETE' })).status, 200);
  assert.equal((await send(`${own}/gateway/backends/a/debug`, { method: 'POST', headers: json, body: '{}' })).status, 404, 'reached the agent (which has no /debug)');
  assert.equal(a.requestsTo('/debug').length, 1);

  const page = await send(`${own}/`);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  assert.equal(page.headers['content-security-policy'], "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'");
  const data = await send(`${own}/gateway/config`);
  assert.equal(data.headers['x-content-type-options'], 'nosniff');
  assert.equal(data.headers['cross-origin-resource-policy'], 'same-origin');
  const refused = await send(`${own}/gateway/config`, { headers: { host: 'evil.example' } });
  assert.equal(refused.headers['x-content-type-options'], 'nosniff');
  const proxied = await send(`${own}/gateway/backends/a/health`);
  assert.equal(proxied.status, 200);
  assert.match(String(proxied.headers['content-security-policy']), /; sandbox$/, 'an agent\'s page is sandboxed');
});
