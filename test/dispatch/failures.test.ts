/**
 * docs/protocol-fidelity.md#failures: the batch never fails because a backend did. Each
 * misbehaviour of a real loopback backend
 * becomes error candidates in place (memory kept) or is repaired (order), never an HTTP error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFakeAgent, type FakeAgent, type FakeBehaviour } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';

let agent: FakeAgent;
let gw: TestGateway;
let seq = 0;

before(async () => {
  agent = await startFakeAgent({ name: 'solo' });
  gw = await startGateway(oneBackend({ solo: { url: agent.url, timeout_s: 0.5, eject_after_failures: 1000 } }));
});
after(async () => {
  await gw.close();
  await agent.close();
});

async function batchWith(b: FakeBehaviour, inputs = [mkInput(1, { num_outputs: 2, memory: { keep: 12345678901234567890n.toString() } }), mkInput(2)]) {
  agent.setBehaviour((r) => (r.path === '/v1/responses' ? b : {}));
  // A fresh request_id per batch, as BENCH sends: an identical re-sent batch would be a replay.
  const res = await gw.post({ request_id: `rq-${++seq}`, inputs });
  agent.setBehaviour({});
  assert.equal(res.status, 200, res.text);
  const cands = res.json as Cand[];
  assert.deepEqual(
    cands.map((c) => [c.source_id, c.candidate_index]),
    [[1, 0], [1, 1], [2, 0]],
  );
  return cands;
}

function assertAllErrors(cands: Cand[], code: string): void {
  for (const c of cands) {
    assert.equal(c.status, 'error');
    assert.equal(c.error?.code, code);
    assert.equal(c.error?.component, 'solo');
    assert.equal(c.output, null);
  }
  // The input's memory is kept on error candidates, with the gateway's tag.
  assert.equal(cands[0]!.memory.keep, '12345678901234567890');
  assert.deepEqual(cands[0]!.memory._gateway, { backend: 'solo', route: 'default' });
}

test('a backend slower than timeout_s yields gateway_backend_timeout candidates', async () => {
  assertAllErrors(await batchWith({ delayMs: 2000 }), 'gateway_backend_timeout');
});

test('a socket closed mid-body yields gateway_backend_unreachable candidates', async () => {
  assertAllErrors(await batchWith({ closeMidBody: true }), 'gateway_backend_unreachable');
});

test('a 200 with a body that is not JSON yields gateway_backend_invalid_response', async () => {
  assertAllErrors(await batchWith({ garbage: true }), 'gateway_backend_invalid_response');
});

test('HTTP 500 yields gateway_backend_http_error', async () => {
  assertAllErrors(await batchWith({ status: 500 }), 'gateway_backend_http_error');
});

test('HTTP 503 yields gateway_backend_not_ready', async () => {
  assertAllErrors(await batchWith({ status: 503 }), 'gateway_backend_not_ready');
});

test('HTTP 422 and 429 yield gateway_backend_rejected', async () => {
  assertAllErrors(await batchWith({ status: 422 }), 'gateway_backend_rejected');
  assertAllErrors(await batchWith({ status: 429 }), 'gateway_backend_rejected');
});

test('candidates in the wrong order are reordered, not failed', async () => {
  const cands = await batchWith({ reverse: true });
  assert.ok(cands.every((c) => c.status === 'completed'));
  assert.deepEqual(cands.map((c) => c.output?.say), ['solo:1:0', 'solo:1:1', 'solo:2:0']);
});

test('a missing candidate fails only its own slot', async () => {
  const cands = await batchWith({ missing: true });
  assert.deepEqual(cands.map((c) => c.status), ['completed', 'completed', 'error']);
  assert.equal(cands[2]!.error?.code, 'gateway_backend_invalid_response');
  assert.match(cands[2]!.error!.message, /missing/);
});

test('an extra candidate is ignored', async () => {
  const cands = await batchWith({ extra: true });
  assert.ok(cands.every((c) => c.status === 'completed'));
});

test('a duplicated candidate fails its slot', async () => {
  const cands = await batchWith({ duplicate: true });
  assert.equal(cands.filter((c) => c.status === 'error').length, 1);
  assert.match(cands.find((c) => c.status === 'error')!.error!.message, /more than once/);
});

test('a wrong request_id fails the whole answer', async () => {
  assertAllErrors(await batchWith({ wrongRequestId: true }), 'gateway_backend_invalid_response');
});

test('one malformed candidate fails that candidate only', async () => {
  const cands = await batchWith({ malformedCandidate: 1 });
  assert.deepEqual(cands.map((c) => c.status), ['completed', 'error', 'completed']);
  assert.equal(cands[1]!.error?.code, 'gateway_backend_invalid_response');
});

test('error candidates returned by the backend pass through untouched', async () => {
  const cands = await batchWith({ errorCandidates: { code: 'model_error', message: 'bad JSON from model', component: 'model' } });
  for (const c of cands) {
    assert.equal(c.status, 'error');
    assert.deepEqual(c.error, { code: 'model_error', message: 'bad JSON from model', component: 'model' });
  }
});

test('an unreachable backend yields gateway_backend_unreachable for every candidate', async (t) => {
  const f = useFixtures(t);
  const dead = await startFakeAgent({ name: 'dead' });
  const url = dead.url;
  await dead.close();
  const g = await f.gateway(oneBackend({ dead: { url, timeout_s: 1 } }));
  const res = await g.post({ request_id: 'r', inputs: [mkInput(5)] });
  assert.equal(res.status, 200);
  const [c] = res.json as Cand[];
  assert.equal(c!.status, 'error');
  assert.match(c!.error!.code, /gateway_backend_unreachable|gateway_no_backend/);
});
