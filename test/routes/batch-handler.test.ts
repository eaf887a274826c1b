/**
 * What handleBatch (src/routes/batch-handler.ts) guarantees around the store: an answer holding the gateway's
 * own failures is never replayed, and a batch holds the runtime it started on from its first line, through
 * a replay wait, across a hot reload.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startGatewayFromFile, type FileGateway } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { startFakeAgent, type BehaviourFn, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, type Cand } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function agent(name: string, behaviour?: BehaviourFn): Promise<FakeAgent> {
  const a = await startFakeAgent({ name, behaviour });
  cleanup.push(() => a.close());
  return a;
}

async function gateway(config: Record<string, unknown>): Promise<FileGateway> {
  const gw = await startGatewayFromFile(config);
  cleanup.push(() => gw.close());
  return gw;
}

const single = (url: string): Record<string, unknown> => (oneBackend({ svc: { url } }));

test('a batch answered with gateway errors is not replayed: re-sent after the backend recovers, it is computed again', async () => {
  const a = await agent('a', (r, i) => (r.path === '/v1/responses' && i === 0 ? { status: 503 } : {}));
  const gw = await gateway(single(a.url));
  const body = { request_id: 'retry-me', inputs: [mkInput(1), mkInput(2, { num_outputs: 2 })] };

  const first = await gw.post(body);
  assert.equal(first.status, 200);
  assert.deepEqual((first.json as Cand[]).map((c) => c.error?.code), Array(3).fill('gateway_backend_not_ready'));

  const second = await gw.post(body);
  assert.equal(second.status, 200);
  assert.equal(second.headers.get('x-gateway-replay'), null, 'computed, not replayed');
  assert.deepEqual((second.json as Cand[]).map((c) => c.status), ['completed', 'completed', 'completed']);
  assert.equal(a.requestsTo('/v1/responses').length, 2, 'the backend received the batch twice');

  // A completed answer is stored as before.
  const third = await gw.post(body);
  assert.equal(third.headers.get('x-gateway-replay'), 'hit');
  assert.equal(third.text, second.text);
  assert.equal(a.requestsTo('/v1/responses').length, 2);
});

test('a batch waiting on a replay during a hot reload finishes on its own runtime, with completed candidates', async () => {
  // The first batch hangs at the backend until its client leaves; the duplicate then computes itself.
  const old = await agent('old', (r, i) => (r.path === '/v1/responses' && i === 0 ? { hang: true } : {}));
  const next = await agent('next');
  const gw = await gateway(single(old.url));
  const body = JSON.stringify({ request_id: 'dup', inputs: [mkInput(1), mkInput(2)] });

  const leaving = new AbortController();
  const first = fetch(`${gw.url}/v1/responses`, { method: 'POST', body, signal: leaving.signal }).catch((e: unknown) => e);
  await waitFor('the first batch at the backend', () => old.requestsTo('/v1/responses').length === 1);
  const duplicate = gw.post(JSON.parse(body) as object);
  await waitFor('the duplicate waiting on the replay', () => gw.app.gateway.store.stats().replayWaits === 1);

  const reload = await gw.reload(single(next.url));
  assert.equal(reload.status, 200, reload.text);
  // The first client leaves: its batch ends, the replay lease is abandoned and the duplicate computes.
  leaving.abort();
  await first;

  const res = await duplicate;
  assert.equal(res.status, 200, res.text);
  const cands = res.json as Cand[];
  assert.deepEqual(
    cands.map((c) => [c.status, c.error?.code ?? null, c.memory.seen_by]),
    [['completed', null, 'old'], ['completed', null, 'old']],
    'completed on the runtime it started on (not UND_ERR_DESTROYED on closed pools)',
  );
  const after1 = await gw.post({ request_id: 'later', inputs: [mkInput(3)] });
  assert.equal((after1.json as Cand[])[0]!.memory.seen_by, 'next');
});
