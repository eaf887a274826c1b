/**
 * The admin endpoints the console reads (src/routes/console.ts): /gateway/overview, /gateway/batches and the
 * per-backend figures of /gateway/backends, on a gateway built from a config file with loopback agents.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { histogramQuantile } from '../../src/stats/histogram-quantile.js';
import { startGatewayFromFile, type FileGateway } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput } from '../helpers/gateway.js';

const SECRET = 'do-not-show-this-prompt';
let ok: FakeAgent;
let failing: FakeAgent;
let gw: FileGateway;

function config(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    admin: { recent_batches: 3 },
    backends: { ok: { url: ok.url }, failing: { url: failing.url } },
    routes: [
      { name: 'bad', match: { 'extra_keys.bad': true }, backend: 'failing' },
      { name: 'main', backend: 'ok' },
    ],
    ...over,
  };
}

before(async () => {
  ok = await startFakeAgent({ name: 'ok' });
  failing = await startFakeAgent({ name: 'failing', behaviour: { errorCandidates: { code: 'model_error' } } });
  gw = await startGatewayFromFile(config());
});

after(async () => {
  await gw.close();
  await Promise.all([ok.close(), failing.close()]);
});

test('histogramQuantile interpolates within the bucket holding the rank, as Prometheus does', () => {
  // 2 observations <= 1, 4 more <= 2, 2 more above: the median (rank 4) is halfway through (1, 2].
  const b = [{ le: 1, count: 2 }, { le: 2, count: 6 }, { le: Infinity, count: 8 }];
  assert.equal(histogramQuantile(b, 0.5), 1.5);
  assert.equal(histogramQuantile(b, 0.25), 1);
  assert.equal(histogramQuantile(b, 0.99), 2, 'in the +Inf bucket: the highest finite bound');
  assert.equal(histogramQuantile([{ le: 1, count: 0 }], 0.5), null);
});

test('/gateway/batches: the last admin.recent_batches batches, newest first, counts and codes only', async () => {
  for (const [id, bad] of [['b1', false], ['b2', true], ['b3', false], ['b4', false]] as const) {
    const res = await gw.post({ request_id: id, inputs: [mkInput(0, { instruction: { type: 'user', content: SECRET }, extra_keys: { bad } }), mkInput(1)] });
    assert.equal(res.status, 200, res.text);
  }
  const res = await gw.admin('/gateway/batches');
  assert.equal(res.status, 200);
  const body = res.json as { capacity: number; batches: Record<string, unknown>[] };
  assert.equal(body.capacity, 3);
  assert.deepEqual(body.batches.map((b) => b.request_id), ['b4', 'b3', 'b2']);
  const b2 = body.batches[2]!;
  assert.equal(b2.inputs, 2);
  assert.equal(b2.candidates, 2);
  assert.deepEqual(b2.routes, { bad: 1, main: 1 });
  assert.deepEqual(b2.backends, { failing: 1, ok: 1 });
  assert.deepEqual(b2.error_codes, { model_error: 1 });
  assert.equal(typeof b2.duration_ms, 'number');
  assert.ok(!res.text.includes(SECRET), 'no prompt in the list');
  assert.ok(!res.text.includes('memory'), 'no memory in the list');
  assert.deepEqual(((await gw.admin('/gateway/batches?limit=1')).json as { batches: { request_id: string }[] }).batches.map((b) => b.request_id), ['b4']);
});

test('/gateway/batches?limit= that is not a whole number >= 1 is a 400 naming the parameter', async () => {
  for (const bad of ['0', 'abc', '1.5', '-2']) {
    const res = await gw.admin(`/gateway/batches?limit=${bad}`);
    assert.equal(res.status, 400, bad);
    assert.match(res.text, /query parameter limit: expected a whole number >= 1/);
  }
});

test('/gateway/overview: version, store, batches, error candidates by code, overhead, last reload', async () => {
  const o = (await gw.admin('/gateway/overview')).json as Record<string, Record<string, unknown>> & { version: string; uptime_s: number };
  assert.equal(o.version, gw.app.gateway.version);
  assert.deepEqual(o.store, { kind: 'memory', up: true, fallbacks: 0 });
  assert.equal(o.listeners!.agent, gw.url);
  assert.equal(o.listeners!.admin, gw.adminUrl);
  assert.equal(o.config!.path, gw.file.path);
  assert.equal(o.config!.last_reload, null);
  assert.equal(o.batches!.in_flight, 0);
  assert.equal(typeof o.batches!.per_second, 'number');
  assert.deepEqual(o.error_candidates, { model_error: 1 });
  const overhead = o.overhead_ms as { samples: number; p50: number; p99: number };
  assert.equal(overhead.samples, 4, 'one overhead observation per batch');
  assert.ok(overhead.p50 > 0 && overhead.p99 >= overhead.p50);

  gw.file.writeText('backends: [not, a, map]\n');
  assert.equal((await gw.admin('/gateway/reload', { method: 'POST' })).status, 400);
  const lastReload = async (): Promise<unknown> => ((await gw.admin('/gateway/overview')).json as { config: { last_reload: unknown } }).config.last_reload;
  const refused = (await lastReload()) as { ok: boolean; trigger: string; detail: string };
  assert.equal(refused.ok, false);
  assert.equal(refused.trigger, 'api');
  assert.match(refused.detail, /backends/);
  assert.equal((await gw.reload(config())).status, 200);
  assert.deepEqual({ ...((await lastReload()) as object), at: null }, { at: null, trigger: 'api', ok: true, detail: null });
});

test('/gateway/backends adds each backend\'s latency percentiles and sub-requests by outcome', async () => {
  const { backends } = (await gw.admin('/gateway/backends')).json as { backends: { name: string; latency_ms: { samples: number; p50: number | null }; outcomes: Record<string, number> }[] };
  const okB = backends.find((b) => b.name === 'ok')!;
  assert.equal(okB.latency_ms.samples, 4);
  assert.ok(okB.latency_ms.p50 !== null && okB.latency_ms.p50 > 0);
  assert.deepEqual(okB.outcomes, { ok: 4 });
  const failingB = backends.find((b) => b.name === 'failing')!;
  assert.equal(failingB.latency_ms.samples, 1);
});
