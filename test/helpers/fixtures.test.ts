/**
 * The test fixtures (helpers/fixtures.ts): what a test starts is closed when it ends, last started first, and
 * one failing undo does not keep the others from running.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { http } from './config-file.js';
import { oneBackend, useFixtures } from './fixtures.js';
import type { TestGateway } from './gateway.js';

/** A context whose `after` hooks the test runs itself, so it can look at what they did. */
function manualContext(): { after(fn: () => Promise<void>): void; end(): Promise<void> } {
  const hooks: (() => Promise<void>)[] = [];
  return { after: (fn) => void hooks.push(fn), end: async () => { for (const h of hooks) await h(); } };
}

test('a gateway and an agent a test started are closed when it ends, the gateway first', async (t) => {
  const closed: string[] = [];
  let agentUrl = '';
  let gatewayUrl = '';
  await t.test('a test that starts an agent and a gateway in front of it', async (inner) => {
    const f = useFixtures(inner);
    const agent = await f.agent({ name: 'x' });
    const gw = await f.gateway({ backends: { x: { url: agent.url } }, routes: [{ name: 'd', backend: 'x' }] });
    for (const [name, o] of [['agent', agent], ['gateway', gw]] as const) {
      const close = o.close.bind(o);
      o.close = () => (closed.push(name), close());
    }
    [agentUrl, gatewayUrl] = [agent.url, gw.url];
    assert.equal((await gw.post({ request_id: 'r', inputs: [] })).status, 200);
  });
  assert.deepEqual(closed, ['gateway', 'agent']);
  await assert.rejects(fetch(`${gatewayUrl}/health`), 'the gateway no longer listens');
  await assert.rejects(fetch(`${agentUrl}/health`), 'the agent no longer listens');
});

test('after a failed test every undo still runs, and the first failure is reported', async () => {
  const ctx = manualContext();
  const f = useFixtures(ctx);
  const ran: number[] = [];
  f.defer(() => void ran.push(1));
  f.defer(() => {
    ran.push(2);
    throw new Error('undo 2 failed');
  });
  f.defer(async () => {
    ran.push(3);
    throw new Error('undo 3 failed');
  });
  await assert.rejects(ctx.end(), /undo 3 failed/);
  assert.deepEqual(ran, [3, 2, 1]);
});

test('oneBackend: the named backends, a catch-all route to the first, `over` on top', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  assert.deepEqual(oneBackend({ a, b: 'http://127.0.0.1:9', c: { urls: ['http://127.0.0.1:8'], timeout_s: 1 } }), {
    backends: { a: { url: a.url }, b: { url: 'http://127.0.0.1:9' }, c: { urls: ['http://127.0.0.1:8'], timeout_s: 1 } },
    routes: [{ name: 'default', backend: 'a' }],
  });
  const over = oneBackend({ a, b: a.url }, { route: { fallback: ['b'] }, probe_interval_s: 1, request_timeout_s: 5 });
  assert.deepEqual(over.routes, [{ name: 'default', backend: 'a', fallback: ['b'] }]);
  assert.equal(over.probe_interval_s, 1);
  assert.equal(over.request_timeout_s, 5);
  assert.deepEqual(oneBackend({ a, b: a.url }, { route: { split: { a: 1, b: 1 } } }).routes, [{ name: 'default', split: { a: 1, b: 1 } }]);
  // The config it builds is one the gateway loads and serves.
  const gw = await f.gateway(oneBackend({ a }));
  const res = await gw.post({ request_id: 'one', inputs: [{ id: 1, instruction: { type: 'user', content: 'hi' } }] });
  assert.equal(res.status, 200, res.text);
  assert.equal(a.requestsTo('/v1/responses').length, 1);
  // A running server is taken by its URL; a block of data is the backend's config as it is.
  const raw = await f.server((_req, res) => res.end());
  assert.deepEqual(oneBackend({ raw }).backends, { raw: { url: raw.url } });
  assert.throws(() => oneBackend({}), /name at least one backend/);
});

test('the gateway fixtures probe an hour apart unless the config says how often, and listen for admin', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const probing = (gw: { app: TestGateway['app'] }): number => gw.app.gateway.current.config.probe_interval_s;
  const quiet = await f.gateway(oneBackend({ a }));
  assert.equal(probing(quiet), 3600);
  assert.equal((await http(`${quiet.adminUrl}/gateway/backends`)).status, 200);
  assert.equal(probing(await f.gateway(oneBackend({ a }, { probe_interval_s: 0.5 }))), 0.5);
  const file = await f.fileGateway(oneBackend({ a }));
  assert.equal(probing(file), 3600);
  assert.equal((await file.reload(oneBackend({ a }, { probe_interval_s: 2 }))).status, 200);
  assert.equal(probing(file), 2);
  assert.equal((await file.reload(oneBackend({ a }))).status, 200);
  assert.equal(probing(file), 3600, 'a reload gets the defaults too');
  assert.equal((await f.gateway(oneBackend({ a }), { admin: false })).adminUrl, '');
});
