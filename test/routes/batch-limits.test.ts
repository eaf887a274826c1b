/**
 * Requests whose answer would be too big (docs/configuration.md#limits-and-timeouts) against a real gateway with the
 * default limits and a real loopback backend: the requests that used to kill the process (a 600 MB answer, a
 * heap exhausted by error candidates, 10 million candidates) are 422s naming the config key, before any
 * backend is called, and the gateway keeps serving; a big amplification within the limits is answered.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';

let agent: FakeAgent;
let gw: TestGateway;
before(async () => {
  agent = await startFakeAgent({ name: 'a' });
  gw = await startGateway(oneBackend({ a: agent }));
});
after(async () => {
  await gw.close();
  await agent.close();
});

/** A memory object of `keys` keys as JSON text. */
function memoryText(keys: number, tag: string): string {
  const parts: string[] = [];
  for (let k = 0; k < keys; k++) parts.push(`"${tag}${k}":${k}`);
  return `{${parts.join(',')}}`;
}

async function assertRefused(body: unknown, key: string): Promise<void> {
  agent.reset();
  const res = await gw.post(body as object);
  assert.equal(res.status, 422, res.text.slice(0, 300));
  const detail = (res.json as { detail: { loc: unknown[]; msg: string; type: string }[] }).detail;
  assert.equal(detail.length, 1);
  assert.deepEqual(detail[0]!.loc, ['body', 'inputs']);
  assert.ok(detail[0]!.msg.includes(key), detail[0]!.msg);
  assert.equal(agent.requestsTo('/v1/responses').length, 0, 'no backend was called');
  // Still serving: /health and a normal batch.
  assert.equal((await fetch(`${gw.url}/health`)).status, 200);
  const ok = await gw.post({ request_id: 'after', inputs: [mkInput(1)] });
  assert.equal(ok.status, 200);
}

test('1 input with 600 KB of memory x 1024 outputs (a 600 MB answer): 422 naming server.max_answer_mb', async () => {
  const body = { request_id: 'huge-answer', inputs: [mkInput(1, { memory: { blob: 'x'.repeat(600 * 1024) }, num_outputs: 1024 })] };
  await assertRefused(body, 'server.max_answer_mb');
});

test('30 inputs x 1024 outputs with 5,000-key memory: 422 naming server.max_candidates_per_batch', async () => {
  agent.setBehaviour({ status: 503 });
  try {
    const mem = JSON.parse(memoryText(5000, 'k')) as Record<string, number>;
    const inputs = Array.from({ length: 30 }, (_, i) => mkInput(i, { memory: mem, num_outputs: 1024 }));
    await assertRefused({ request_id: 'heap', inputs }, 'server.max_candidates_per_batch');
  } finally {
    agent.setBehaviour({});
  }
});

test('10,000 inputs x 1000 outputs: 422 naming server.max_candidates_per_batch', async () => {
  const inputs = Array.from({ length: 10_000 }, (_, i) => ({ id: i, instruction: { type: 'user', content: 'x' }, num_outputs: 1000 }));
  await assertRefused({ request_id: 'ten-million', inputs }, 'server.max_candidates_per_batch');
});

test('within the limits, 4 inputs x 1000 outputs from a 503 backend: 200, every error candidate with its exact memory', async () => {
  agent.setBehaviour({ status: 503 });
  try {
    agent.reset();
    // Numbers JSON.parse would change (a 20-digit integer, 1.0) and non-ASCII text: the memory must come back
    // byte for byte in all 4,000 error candidates.
    const memories = [0, 1, 2, 3].map((i) => `{"n":12345678901234567890${i},"f":1.0,"s":"é${i}",${memoryText(200, `m${i}_`).slice(1)}`);
    const inputs = memories.map(
      (m, i) => `{"id":${i},"instruction":{"type":"user","content":"go"},"memory":${m},"num_outputs":1000}`,
    );
    const res = await gw.post(`{"request_id":"amp","inputs":[${inputs.join(',')}]}`);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    const cands = JSON.parse(res.text) as { status: string; error: { code: string } | null; source_id: number }[];
    assert.equal(cands.length, 4000);
    assert.ok(cands.every((c) => c.status === 'error' && c.error?.code === 'gateway_backend_not_ready'));
    for (let i = 0; i < 4; i++) {
      // Each candidate's memory is the input's memory text, then the gateway's tag.
      const needle = `"memory":${memories[i]!.slice(0, -1)},"_gateway":`;
      assert.equal(res.text.split(needle).length - 1, 1000, `input ${i}: 1000 candidates with its exact memory`);
    }
    assert.equal(agent.requestsTo('/v1/responses').length, 1, 'the backend was called (and answered 503)');
  } finally {
    agent.setBehaviour({});
  }
});
