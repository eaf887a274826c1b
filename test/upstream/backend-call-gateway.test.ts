/**
 * A whole gateway against backends that never finish their answer: a trickling primary falls back in time,
 * an endless primary becomes error candidates (or the fallback's), an endless shadow counts a failure, and the
 * process keeps serving. Backends are real loopback servers.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { mkInput, type Cand } from '../helpers/gateway.js';
import { oneBackend, useFixtures, type Fixtures } from '../helpers/fixtures.js';

/** A backend that passes probes and answers /v1/responses with `answer`. */
async function rawBackend(
  f: Fixtures,
  answer: (res: ServerResponse) => void,
  info?: (res: ServerResponse) => void,
): Promise<{ url: string; closes: () => number }> {
  let closes = 0;
  const { url } = await f.rawAgent((res) => {
    res.on('close', () => closes++);
    answer(res);
  }, info);
  return { url, closes: () => closes };
}

function endless(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const pump = (): void => {
    while (!res.destroyed) {
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  res.write('[');
  pump();
}

function trickle(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const timer = setInterval(() => res.write(' '), 150);
  res.on('close', () => clearInterval(timer));
}

async function metricsOf(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

test('a primary trickling one byte every 150 ms is cut at timeout_s and the fallback answers', async (t) => {
  const f = useFixtures(t);
  const slow = await rawBackend(f, trickle);
  const good = await f.agent({ name: 'good' });
  const gw = await f.gateway(oneBackend({ slow: { url: slow.url, timeout_s: 0.5 }, good }, { route: { fallback: ['good'] } }));
  const res = await gw.post({ request_id: 'trickle-1', inputs: [mkInput(1, { num_outputs: 2 }), mkInput(2)] });
  assert.equal(res.status, 200, res.text);
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => [c.status, c.memory._gateway?.backend]), [
    ['completed', 'good'],
    ['completed', 'good'],
    ['completed', 'good'],
  ]);
  assert.equal(good.requestsTo('/v1/responses').length, 1);
});

test('an endless chunked primary: error candidates naming max_response_mb, then the fallback; the process survives', async (t) => {
  const f = useFixtures(t);
  const huge = await rawBackend(f, endless);
  const good = await f.agent({ name: 'good' });
  const gw = await f.gateway({
    backends: { huge: { url: huge.url, max_response_mb: 1 }, alone: { url: huge.url, max_response_mb: 2 }, good: { url: good.url } },
    routes: [
      { name: 'fb', match: { 'attributes.kind': 'fb' }, backend: 'huge', fallback: ['good'] },
      { name: 'default', backend: 'alone' },
    ],
  });
  // Without a fallback: error candidates in place, memory kept, and the key in the message.
  for (let i = 0; i < 4; i++) {
    const res = await gw.post({ request_id: `endless-${i}`, inputs: [mkInput(1, { memory: { keep: 7 } }), mkInput(2)] });
    assert.equal(res.status, 200, res.text);
    const cands = res.json as Cand[];
    for (const c of cands) {
      assert.equal(c.status, 'error');
      assert.equal(c.error?.code, 'gateway_backend_invalid_response');
      assert.match(c.error?.message ?? '', /larger than 2097152 bytes \(backends\.alone\.max_response_mb\)/);
    }
    assert.equal(cands[0]!.memory.keep, 7);
  }
  // With a fallback: its candidates.
  const res = await gw.post({ request_id: 'endless-fb', inputs: [mkInput(1, { attributes: { kind: 'fb' } })] });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual((res.json as Cand[]).map((c) => [c.status, c.memory._gateway?.backend]), [['completed', 'good']]);
  // Every endless answer was aborted (its connection closed), none left streaming.
  await waitFor('every endless answer closed', () => huge.closes() === 5);
  const health = await fetch(`${gw.url}/health`);
  assert.equal(health.status, 200);
});

test('an endless shadow: clients get their answers, the shadow counts a failure, the process keeps serving', async (t) => {
  const f = useFixtures(t);
  const huge = await rawBackend(f, endless);
  const prim = await f.agent({ name: 'prim' });
  const gw = await f.gateway(oneBackend({ prim, huge: { url: huge.url, max_response_mb: 1 } }, { route: { shadow: ['huge'] } }));
  for (let i = 0; i < 3; i++) {
    const res = await gw.post({ request_id: `shadow-${i}`, inputs: [mkInput(1), mkInput(2)] });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((res.json as Cand[]).map((c) => c.memory._gateway?.backend), ['prim', 'prim']);
  }
  await waitFor('three shadow failures counted', async () =>
    /magma_gateway_shadow_requests_total\{agent="default",route="default",backend="huge",outcome="failed"\} 3/.test(await metricsOf(gw.url)),
  );
  await waitFor('every shadow answer closed', () => huge.closes() === 3);
  const res = await gw.post({ request_id: 'shadow-after', inputs: [mkInput(1)] });
  assert.equal(res.status, 200);
});

test('an endless /v1/info fails the probe at probe_max_response_kb: the backend is not ready, the gateway serves /health', async (t) => {
  const f = useFixtures(t);
  const huge = await rawBackend(f, (res) => res.end('[]'), endless);
  const gw = await f.gateway(oneBackend({ huge: huge.url }, { probe_max_response_kb: 64 }));
  await waitFor('the first probe finished', async () => {
    const view = (await (await fetch(`${gw.adminUrl}/gateway/backends`)).json()) as { backends: { replicas: { last_probe: unknown }[] }[] };
    return view.backends[0]!.replicas[0]!.last_probe !== null;
  });
  const view = (await (await fetch(`${gw.adminUrl}/gateway/backends`)).json()) as {
    backends: { replicas: { state: string; last_probe: { ok: boolean; error: string } }[] }[];
  };
  const replica = view.backends[0]!.replicas[0]!;
  assert.equal(replica.last_probe.ok, false);
  assert.match(replica.last_probe.error, /larger than 65536 bytes \(probe_max_response_kb\)/);
  assert.equal((await fetch(`${gw.url}/health`)).status, 503);
});
