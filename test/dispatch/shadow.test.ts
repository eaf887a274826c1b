/**
 * Shadow traffic (docs/gateway-behaviour.md, "Shadow traffic"): copies to shadow backends never delay, change or fail
 * the client's answer.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startFakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway } from '../helpers/gateway.js';
import type { Cand } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function metricsOf(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

test('shadow answers are compared with the primary decision and counted as agreed or not', async () => {
  const prim = await startFakeAgent({ name: 'prim' });
  const same = await startFakeAgent({ name: 'same', behaviour: { candidate: (i, c) => ({ output: { say: `prim:${String(i.id)}:${c}`, tool_calls: [] } }) } });
  const diff = await startFakeAgent({ name: 'diff' });
  const gw = await startGateway({
    probe_interval_s: 3600,
    backends: { prim: { url: prim.url }, same: { url: same.url }, diff: { url: diff.url } },
    routes: [{ name: 'default', backend: 'prim', shadow: ['same', 'diff'] }],
  });
  cleanup.push(async () => {
    await gw.close();
    await Promise.all([prim.close(), same.close(), diff.close()]);
  });
  const res = await gw.post({ request_id: 'sh', inputs: [mkInput(1, { memory: { _gateway: { backend: 'prim', route: 'default' }, k: 1 } }), mkInput(2)] });
  assert.deepEqual((res.json as Cand[]).map((c) => c.output!.say), ['prim:1:0', 'prim:2:0']);
  await waitFor('two disagreements counted', async () => /shadow_agreement_total\{agent="default",route="default",backend="diff",agreed="false"\} 2/.test(await metricsOf(gw.url)), { timeoutMs: 3000 });
  const m = await metricsOf(gw.url);
  assert.match(m, /magma_gateway_shadow_agreement_total\{agent="default",route="default",backend="same",agreed="true"\} 2/);
  assert.match(m, /magma_gateway_shadow_requests_total\{agent="default",route="default",backend="same",outcome="ok"\} 1/);
  // The shadow saw the input without the gateway's memory key.
  const sent = same.requestsTo('/v1/responses')[0]!.body as { inputs: { memory: Record<string, unknown> }[] };
  assert.deepEqual(sent.inputs[0]!.memory, { k: 1 });
});

test('a hanging shadow does not delay the answer, and past shadow_max_in_flight shadows are dropped', async () => {
  const prim = await startFakeAgent({ name: 'prim' });
  const hang = await startFakeAgent({ name: 'hang', behaviour: (r) => (r.path === '/v1/responses' ? { hang: true } : {}) });
  const gw = await startGateway({
    probe_interval_s: 3600,
    shadow_max_in_flight: 2,
    backends: { prim: { url: prim.url }, hang: { url: hang.url, timeout_s: 30 } },
    routes: [{ name: 'default', backend: 'prim', shadow: ['hang'] }],
  });
  cleanup.push(async () => {
    await gw.close();
    hang.kill();
    await prim.close();
  });
  for (let i = 0; i < 4; i++) {
    const t0 = Date.now();
    const res = await gw.post({ request_id: `h${i}`, inputs: [mkInput(1)] });
    assert.equal(res.status, 200);
    assert.equal((res.json as Cand[])[0]!.status, 'completed');
    assert.ok(Date.now() - t0 < 1000, 'answered at the primary speed');
  }
  const m = await metricsOf(gw.url);
  assert.match(m, /magma_gateway_shadow_requests_total\{agent="default",route="default",backend="hang",outcome="dropped"\} 2/);
});

test('a failing shadow changes nothing in the answer', async () => {
  const prim = await startFakeAgent({ name: 'prim' });
  const bad = await startFakeAgent({ name: 'bad', behaviour: (r) => (r.path === '/v1/responses' ? { status: 500 } : {}) });
  const gw = await startGateway({
    probe_interval_s: 3600,
    backends: { prim: { url: prim.url }, bad: { url: bad.url } },
    routes: [{ name: 'default', backend: 'prim', shadow: ['bad'] }],
  });
  cleanup.push(async () => {
    await gw.close();
    await Promise.all([prim.close(), bad.close()]);
  });
  const res = await gw.post({ request_id: 'f', inputs: [mkInput(1, { num_outputs: 2 })] });
  assert.deepEqual((res.json as Cand[]).map((c) => c.status), ['completed', 'completed']);
  await waitFor('the failed shadow counted', async () => /backend="bad",outcome="failed"\} 1/.test(await metricsOf(gw.url)), { timeoutMs: 3000 });
});
