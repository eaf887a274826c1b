/**
 * A client that never reads its answer cannot hold it in the gateway (docs/limits-and-edges.md#deadlines): past
 * `request_timeout_s` from when the answer began it is disconnected and the memory budget gets the answer's bytes
 * back, for a buffered answer and for a streamed one. Real loopback backend, a raw socket that never reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { postNeverReading } from '../helpers/raw-http.js';

/** Each candidate's memory: 8 of them are far more than loopback's socket buffers take. */
const PAD = 2 * 1024 * 1024;

async function held(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('magma_gateway_memory_budget_held_bytes '));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

for (const [shape, streamOverMb] of [['buffered', 512], ['streamed', 1]] as const) {
  test(`a ${shape} answer its client never reads is dropped after request_timeout_s, and its bytes leave the budget`, async (t) => {
    const f = useFixtures(t);
    const a = await f.agent({ name: 'a', behaviour: { candidate: () => ({ memory: { pad: 'x'.repeat(PAD) } }) } });
    const gw = await f.gateway(oneBackend({ a: a.url }, { request_timeout_s: 2, server: { stream_answers_over_mb: streamOverMb, max_answer_mb: 512 } }));
    const socket = postNeverReading(gw.url, JSON.stringify({ request_id: `never-${shape}`, inputs: [mkInput(1, { num_outputs: 8 })] }));
    f.defer(() => socket.destroy());
    await waitFor('the answer held for the client', async () => (await held(gw)) > PAD, { timeoutMs: 10_000 });
    await waitFor('the answer given back', async () => (await held(gw)) === 0, { timeoutMs: 10_000 });
    // The same gateway still answers a client that reads.
    const res = await gw.post({ request_id: `reads-${shape}`, inputs: [mkInput(1)] });
    assert.equal(res.status, 200, res.text);
  });
}
