/**
 * The correlation headers a batch carries to its backends (docs/operations.md#logs):
 * `x-request-id` and W3C `traceparent` are
 * passed on when the client sent them (a malformed traceparent is replaced), and generated when absent, the same
 * values on every sub-request of one batch.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/;
let a: FakeAgent;
let b: FakeAgent;
let gw: TestGateway;
let n = 0;

before(async () => {
  [a, b] = [await startFakeAgent({ name: 'a' }), await startFakeAgent({ name: 'b' })];
  gw = await startGateway(oneBackend({ pool: { urls: [a.url, b.url] } }));
});
after(async () => {
  await gw.close();
  await Promise.all([a.close(), b.close()]);
});

/** One batch of 4 inputs (so both replicas get a sub-request); the headers each replica received. */
async function sent(headers: Record<string, string>): Promise<{ rid: unknown; tp: unknown }[]> {
  a.reset();
  b.reset();
  // A fresh request_id each time: a repeated (request_id, body) is answered by replay without a backend call.
  const res = await gw.post({ request_id: `trace-${++n}`, inputs: [1, 2, 3, 4].map((i) => mkInput(i)) }, headers);
  assert.equal(res.status, 200);
  const reqs = [...a.requestsTo('/v1/responses'), ...b.requestsTo('/v1/responses')];
  assert.equal(reqs.length, 2);
  return reqs.map((r) => ({ rid: r.headers['x-request-id'], tp: r.headers.traceparent }));
}

test('a client traceparent and x-request-id are passed to every backend sub-request', async () => {
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  assert.deepEqual(await sent({ traceparent: tp, 'x-request-id': 'req-42' }), [
    { rid: 'req-42', tp },
    { rid: 'req-42', tp },
  ]);
});

test('without them the gateway generates both, one trace per batch', async () => {
  const [x, y] = await sent({});
  assert.match(String(x!.tp), TRACEPARENT);
  assert.deepEqual(x, y);
  const [z] = await sent({});
  assert.notEqual(z!.tp, x!.tp, 'each batch starts its own trace');
});

test('a malformed traceparent is replaced rather than passed on', async () => {
  for (const bad of ['garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01']) {
    const [x] = await sent({ traceparent: bad });
    assert.match(String(x!.tp), TRACEPARENT, bad);
  }
});
