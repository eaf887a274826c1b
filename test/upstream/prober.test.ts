/**
 * Probing and ejection against real loopback agents (docs/operations.md#probing-and-ejection): a killed replica is ejected and
 * traffic moves without a failed candidate, the restarted replica comes back; /health follows the backends
 * (503 and back to 200); /v1/info capabilities change with them; an incompatible replica is never routed to.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BackendView } from '../../src/admin/views.js';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import type { FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';

const f = useFixtures();

const agent = (name: string, port?: number): Promise<FakeAgent> => f.agent({ name, port });

/** A gateway probing every 0.1 s, so replica states follow the agents quickly. */
const gateway = (config: Record<string, unknown>): Promise<TestGateway> => f.gateway({ probe_interval_s: 0.1, probe_timeout_s: 0.5, ...config });

async function states(gw: TestGateway, backend: string): Promise<string[]> {
  const res = await http(`${gw.adminUrl}/gateway/backends`);
  const b = (res.json as { backends: BackendView[] }).backends.find((x) => x.name === backend);
  return b?.replicas.map((r) => r.state) ?? [];
}

/** A batch of `n` inputs; asserts every candidate completed and returns which agents served them. */
async function batch(gw: TestGateway, n: number, id: string): Promise<string[]> {
  const res = await gw.post({ request_id: id, inputs: Array.from({ length: n }, (_, i) => mkInput(i)) });
  assert.equal(res.status, 200, res.text);
  const cands = res.json as Cand[];
  for (const c of cands) assert.equal(c.status, 'completed', JSON.stringify(c.error));
  return cands.map((c) => String(c.memory.seen_by));
}

test('a killed replica is ejected, traffic moves with no failed batch, and it comes back when restarted', async () => {
  const a = await agent('a');
  const b = await agent('b');
  const gw = await gateway(oneBackend({ pool: { urls: [a.url, b.url] } }, { eject_max_s: 1 }));
  assert.deepEqual(await states(gw, 'pool'), ['ready', 'ready']);
  assert.deepEqual(new Set(await batch(gw, 4, 'before')), new Set(['a', 'b']));

  a.kill();
  // Between the kill and the ejection, a connect failure is retried on the other replica.
  for (let i = 0; i < 3; i++) assert.deepEqual(new Set(await batch(gw, 4, `during-${i}`)), new Set(['b']));
  await waitFor('replica a ejected', async () => (await states(gw, 'pool'))[0] === 'ejected');
  const view = (await http(`${gw.adminUrl}/gateway/backends`)).json as { backends: BackendView[] };
  const ra = view.backends[0]!.replicas[0]!;
  assert.equal(ra.routable, false);
  assert.ok(ra.ejected_until !== null && ra.ejections === 1);
  assert.match(ra.last_error ?? '', /ECONNREFUSED|connect/);
  assert.deepEqual(new Set(await batch(gw, 4, 'ejected')), new Set(['b']));

  const a2 = await agent('a', a.port);
  await waitFor('replica a back', async () => (await states(gw, 'pool'))[0] === 'ready');
  assert.deepEqual(new Set(await batch(gw, 4, 'after')), new Set(['a', 'b']));
  assert.ok(a2.requestsTo('/v1/responses').length > 0, 'the restarted replica takes traffic again');
  const metrics = (await http(`${gw.url}/metrics`)).text;
  assert.match(metrics, /magma_gateway_backend_ejections_total\{backend="pool",replica="pool#0"\} 1/);
  assert.match(metrics, /magma_gateway_backend_up\{backend="pool",replica="pool#0"\} 1/);
});

test('failed requests alone eject a replica between probes; it returns on a good probe after the backoff', async () => {
  const a = await agent('ra');
  const b = await agent('rb');
  const gw = await gateway(oneBackend({ pool: { urls: [a.url, b.url] } }, { probe_interval_s: 1 }));
  a.setBehaviour((r) => (r.path === '/v1/responses' ? { status: 500 } : {}));
  // Each batch's share for `a` fails (500) and falls to error candidates: three in a row eject it.
  for (let i = 0; i < 3; i++) await gw.post({ request_id: `f${i}`, inputs: [mkInput(1), mkInput(2)] });
  assert.deepEqual(await states(gw, 'pool'), ['ejected', 'ready'], 'ejected before any probe could see it');
  assert.deepEqual(new Set(await batch(gw, 4, 'moved')), new Set(['rb']));
  a.setBehaviour({});
  await waitFor('back after the backoff', async () => (await states(gw, 'pool'))[0] === 'ready', { timeoutMs: 4_000 });
  assert.deepEqual(new Set(await batch(gw, 4, 'back')), new Set(['ra', 'rb']));
});

test('/health goes 503 naming the route when its backend is not ready, and back to 200', async () => {
  const a = await agent('h');
  const gw = await gateway(oneBackend({ h: a }));
  assert.deepEqual((await http(`${gw.url}/health`)).json, { status: 'ready' });

  a.setBehaviour({ health: 503 });
  await waitFor('/health 503', async () => (await http(`${gw.url}/health`)).status === 503);
  const down = await http(`${gw.url}/health`);
  assert.match((down.json as { detail: string }).detail, /default/);
  assert.deepEqual(await states(gw, 'h'), ['not_ready'], 'one replica alone is never ejected, only not ready');

  a.setBehaviour({});
  await waitFor('/health 200', async () => (await http(`${gw.url}/health`)).status === 200);
  assert.deepEqual((await http(`${gw.url}/health`)).json, { status: 'ready' });
});

test('/v1/info capabilities follow the routed backends as they change', async () => {
  const x = await agent('x');
  const y = await agent('y');
  const gw = await gateway({
    backends: { x: { url: x.url }, y: { url: y.url } },
    routes: [{ name: 'ab', split: { x: 50, y: 50 } }],
  });
  type Info = { capabilities: Record<string, boolean>; specialized_coaching: string[]; coaching_unavailable_reason: string | null };
  const info = async (): Promise<Info> => (await http(`${gw.url}/v1/info`)).json as Info;
  assert.equal((await info()).capabilities.coaching, false);
  assert.equal((await info()).coaching_unavailable_reason, 'no backend reachable through the routes supports coaching: x, y do not advertise it');

  const coaching = (kinds: string[]) => ({
    info: { capabilities: { inference: true, coaching: true }, specialized_coaching: kinds, coaching_resume: true },
  });
  x.setBehaviour(coaching(['replan', 'speech']));
  await waitFor('reason naming y', async () => /y/.test((await info()).coaching_unavailable_reason ?? ''));
  assert.equal((await info()).capabilities.coaching, false);

  y.setBehaviour(coaching(['speech', 'grasp']));
  await waitFor('coaching on', async () => (await info()).capabilities.coaching === true);
  const on = await info();
  assert.deepEqual(on.specialized_coaching, ['speech']);
  assert.equal(on.coaching_unavailable_reason, null);

  x.setBehaviour({});
  await waitFor('coaching off again', async () => (await info()).capabilities.coaching === false);
});

test('an incompatible replica is never routed to, and is routed to once it speaks protocol 2.0', async () => {
  const old = await agent('old');
  const ok = await agent('ok');
  old.setBehaviour({ info: { protocol_version: '1.0' } });
  const gw = await gateway(oneBackend({ pool: { urls: [old.url, ok.url] } }));
  assert.deepEqual(await states(gw, 'pool'), ['incompatible', 'ready']);
  for (let i = 0; i < 3; i++) assert.deepEqual(new Set(await batch(gw, 4, `inc-${i}`)), new Set(['ok']));
  assert.equal(old.requestsTo('/v1/responses').length, 0);

  old.setBehaviour({ info: { capabilities: { inference: false } } });
  await waitFor('probe sees inference false', async () => old.requestsTo('/v1/info').length > 3);
  assert.deepEqual(await states(gw, 'pool'), ['incompatible', 'ready']);

  old.setBehaviour({});
  await waitFor('old compatible', async () => (await states(gw, 'pool'))[0] === 'ready');
  assert.deepEqual(new Set(await batch(gw, 4, 'compat')), new Set(['old', 'ok']));
});
