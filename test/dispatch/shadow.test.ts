/**
 * Shadow traffic (docs/routing.md#shadow-traffic): copies to shadow backends never delay, change or fail
 * the client's answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkInput } from '../helpers/gateway.js';
import type { Cand } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';

async function metricsOf(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`)).text();
}

test('shadow answers are compared with the primary decision and counted as agreed or not', async (t) => {
  const f = useFixtures(t);
  const prim = await f.agent({ name: 'prim' });
  const same = await f.agent({ name: 'same', behaviour: { candidate: (i, c) => ({ output: { say: `prim:${String(i.id)}:${c}`, tool_calls: [] } }) } });
  const diff = await f.agent({ name: 'diff' });
  const gw = await f.gateway(oneBackend({ prim, same, diff }, { route: { shadow: ['same', 'diff'] } }));
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

test('a hanging shadow does not delay the answer, and past shadow_max_in_flight shadows are dropped', async (t) => {
  const f = useFixtures(t);
  const prim = await f.agent({ name: 'prim' });
  const hang = await f.agent({ name: 'hang', behaviour: (r) => (r.path === '/v1/responses' ? { hang: true } : {}) });
  const gw = await f.gateway(oneBackend({ prim, hang: { url: hang.url, timeout_s: 30 } }, { route: { shadow: ['hang'] }, shadow_max_in_flight: 2 }));
  for (let i = 0; i < 4; i++) {
    const res = await gw.post({ request_id: `h${i}`, inputs: [mkInput(1)] });
    assert.equal(res.status, 200);
    assert.equal((res.json as Cand[])[0]!.status, 'completed');
  }
  // The two shadows sent still hang (they end only at timeout_s, 30 s): the four answers did not wait for them.
  await waitFor('the two shadows sent hanging at the shadow backend', () => hang.inFlight === 2);
  const m = await metricsOf(gw.url);
  assert.match(m, /magma_gateway_shadow_requests_total\{agent="default",route="default",backend="hang",outcome="dropped"\} 2/);
  assert.doesNotMatch(m, /magma_gateway_shadow_requests_total\{agent="default",route="default",backend="hang",outcome="(ok|failed|invalid)"\} [1-9]/);
});

test('a failing shadow changes nothing in the answer', async (t) => {
  const f = useFixtures(t);
  const prim = await f.agent({ name: 'prim' });
  const bad = await f.agent({ name: 'bad', behaviour: (r) => (r.path === '/v1/responses' ? { status: 500 } : {}) });
  const gw = await f.gateway(oneBackend({ prim, bad }, { route: { shadow: ['bad'] } }));
  const res = await gw.post({ request_id: 'f', inputs: [mkInput(1, { num_outputs: 2 })] });
  assert.deepEqual((res.json as Cand[]).map((c) => c.status), ['completed', 'completed']);
  await waitFor('the failed shadow counted', async () => /backend="bad",outcome="failed"\} 1/.test(await metricsOf(gw.url)), { timeoutMs: 3000 });
});

test('a shadow answer that is not UTF-8 is counted invalid, as a primary answer would be judged', async (t) => {
  const f = useFixtures(t);
  const prim = await f.agent({ name: 'prim' });
  const bad = await f.server((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(req.url === '/v1/info' ? inferenceOnlyInfo('bad') : { status: 'ready' }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request_id: string; inputs: { id: number }[] };
      const head = `[{"request_id":${JSON.stringify(body.request_id)},"source_id":${body.inputs[0]!.id},"candidate_index":0,"status":"completed","memory":{"s":"`;
      const tail = '"},"internal_steps":[],"output":{"say":"x","tool_calls":[]},"error":null}]';
      // 0xff is never valid in UTF-8: decoding it as text would turn it into U+FFFD and hide it.
      res.setHeader('content-type', 'application/json');
      res.end(Buffer.concat([Buffer.from(head), Buffer.from([0xff]), Buffer.from(tail)]));
    });
  });
  const gw = await f.gateway(oneBackend({ prim, bad }, { route: { shadow: ['bad'] } }));
  const res = await gw.post({ request_id: 'u', inputs: [mkInput(1)] });
  assert.equal((res.json as Cand[])[0]!.status, 'completed');
  await waitFor('the shadow counted invalid', async () => /backend="bad",outcome="invalid"\} 1/.test(await metricsOf(gw.url)), { timeoutMs: 3000 });
  assert.doesNotMatch(await metricsOf(gw.url), /backend="bad",agreed="(true|false)"\} [1-9]/);
});
