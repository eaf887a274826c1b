/**
 * Per-client limits on a listening gateway (docs/operations.md#client-keys and docs/protocol-fidelity.md#failures): a batch over its client's
 * max_batches_in_flight or max_candidates_per_minute waits, then is served or answered HTTP 200 with a
 * gateway_overloaded error candidate for every candidate, in contract order, memory kept; a client that
 * leaves frees its place; limits are per client; the waits and refusals are counted by client and limit.
 * The backend is a real agent that holds each batch until the test lets it go.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAgentServer } from '../../demo/agents/agent-server.js';
import { http } from '../helpers/config-file.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const KEY_A = 'limits-a-key-0123456789abcdef';
const KEY_B = 'limits-b-key-0123456789abcdef';

/** The headers of team-a's and team-b's batches. */
const A = { 'x-api-key': KEY_A };
const B = { 'x-api-key': KEY_B };

const f = useFixtures();

interface Gated {
  gw: TestGateway;
  /** Request ids the agent received, in order. */
  seen: string[];
  /** One resolver per batch held at the agent. */
  gates: (() => void)[];
  open(): void;
}

async function gatedGateway(clients: Record<string, unknown>): Promise<Gated> {
  const gates: (() => void)[] = [];
  const seen: string[] = [];
  let released = false;
  const agent = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async (_input, ctx) => {
      if (!seen.includes(ctx.requestId)) seen.push(ctx.requestId);
      if (!released) await new Promise<void>((resolve) => gates.push(resolve));
      return { say: 'done' };
    },
  });
  f.defer(() => agent.close());
  const gw = await f.gateway(oneBackend({ g: agent }, { clients }));
  return {
    gw,
    seen,
    gates,
    open: () => {
      released = true;
      for (const g of gates.splice(0)) g();
    },
  };
}

/** A batch whose memory holds a 20-digit integer, as raw JSON text (JSON.stringify would round it). */
function bigBatch(id: string): string {
  const inputs = [mkInput(7, { num_outputs: 2, memory: { n: '__BIG__', note: 'kept' } }), mkInput(3, { memory: { step: 1 } })];
  return JSON.stringify({ request_id: id, inputs }).replace('"__BIG__"', '12345678901234567890');
}

async function metric(gw: TestGateway, series: string): Promise<number> {
  const text = (await http(`${gw.url}/metrics`)).text;
  const row = text.split('\n').find((l) => l.startsWith(`${series} `));
  return row === undefined ? Number.NaN : Number(row.slice(series.length + 1));
}

const waiting = (gw: TestGateway, client: string): number => gw.app.gateway.clients.limiterOf(client)?.waiting ?? 0;

for (const [front, path] of [['the raw front', '/v1/responses'], ['fastify', '/v1/responses?via=fastify']] as const) {
  test(`on ${front}, a batch still over max_batches_in_flight after max_wait_s gets gateway_overloaded candidates, HTTP 200, memory kept`, async () => {
    const { gw, seen, gates, open } = await gatedGateway({ 'team-a': { key: KEY_A, max_batches_in_flight: 1, max_wait_s: 0.3 } });
    const first = gw.call(path, { method: 'POST', body: { request_id: 'held', inputs: [mkInput(1)] }, headers: A });
    await waitFor('the first batch at the agent', () => gates.length === 1);
    const res = await gw.call(path, { method: 'POST', body: bigBatch('over'), headers: A });
    assert.equal(res.status, 200);
    const text = res.text;
    assert.ok(text.includes('"n":12345678901234567890'), 'the big integer in memory is kept digit for digit');
    const cands = JSON.parse(text) as Cand[];
    assert.deepEqual(cands.map((c) => [c.source_id, c.candidate_index]), [[7, 0], [7, 1], [3, 0]], 'contract order');
    for (const c of cands) {
      assert.equal(c.request_id, 'over');
      assert.equal(c.status, 'error');
      assert.equal(c.output, null);
      assert.equal(c.error?.code, 'gateway_overloaded');
      assert.match(c.error?.message ?? '', /client team-a is over clients\.team-a\.max_batches_in_flight \(1\): waited 0\.\d s/);
      assert.deepEqual(c.memory._gateway, { backend: 'g', route: 'default' }, 'tagged as the route would have sent it');
    }
    assert.equal(cands[0]!.memory.note, 'kept');
    assert.equal(cands[2]!.memory.step, 1);
    assert.deepEqual(seen, ['held'], 'the refused batch never reached the backend');
    open();
    assert.equal((await first).status, 200);
    assert.equal(await metric(gw, 'magma_gateway_client_limit_overloaded_total{client="team-a",limit="batches_in_flight"}'), 1);
    assert.equal(await metric(gw, 'magma_gateway_client_limit_waits_total{client="team-a",limit="batches_in_flight"}'), 1);
    assert.equal(await metric(gw, 'magma_gateway_candidate_errors_total{agent="default",backend="g",code="gateway_overloaded"}'), 3);
  });
}

test('a waiting batch is served, in order, as soon as the batch ahead of it finishes', async () => {
  const { gw, seen, gates, open } = await gatedGateway({ 'team-a': { key: KEY_A, max_batches_in_flight: 1 } });
  const first = gw.post({ request_id: 'first', inputs: [mkInput(1)] }, A);
  await waitFor('the first batch at the agent', () => gates.length === 1);
  const second = gw.post({ request_id: 'second', inputs: [mkInput(2)] }, A);
  const third = gw.post({ request_id: 'third', inputs: [mkInput(3)] }, A);
  await waitFor('two batches waiting for the slot', () => waiting(gw, 'team-a') === 2);
  assert.deepEqual(seen, ['first']);
  open();
  for (const r of [first, second, third]) {
    const res = await r;
    assert.equal(res.status, 200);
    assert.ok((res.json as Cand[]).every((c) => c.status === 'completed'));
  }
  assert.deepEqual(seen, ['first', 'second', 'third']);
  assert.equal(await metric(gw, 'magma_gateway_client_limit_waits_total{client="team-a",limit="batches_in_flight"}'), 2);
  assert.equal(await metric(gw, 'magma_gateway_client_limit_overloaded_total{client="team-a",limit="batches_in_flight"}'), 0);
  assert.equal(await metric(gw, 'magma_gateway_client_limit_wait_seconds_count{client="team-a"}'), 2);
});

test('over max_candidates_per_minute a batch is answered gateway_overloaded naming that limit', async () => {
  const { gw, open } = await gatedGateway({ 'team-a': { key: KEY_A, max_candidates_per_minute: 4, max_wait_s: 0 } });
  open();
  const ok = await gw.post({ request_id: 'fits', inputs: [mkInput(1, { num_outputs: 3 })] }, A);
  assert.ok((ok.json as Cand[]).every((c) => c.status === 'completed'));
  const over = await gw.post({ request_id: 'over', inputs: [mkInput(1, { num_outputs: 2 })] }, A);
  assert.equal(over.status, 200);
  const cands = over.json as Cand[];
  assert.equal(cands.length, 2);
  for (const c of cands) {
    assert.equal(c.error?.code, 'gateway_overloaded');
    assert.match(c.error?.message ?? '', /clients\.team-a\.max_candidates_per_minute \(4\)/);
  }
  assert.equal(await metric(gw, 'magma_gateway_client_limit_overloaded_total{client="team-a",limit="candidates_per_minute"}'), 1);
  const one = await gw.post({ request_id: 'one-more', inputs: [mkInput(1)] }, A);
  assert.ok((one.json as Cand[]).every((c) => c.status === 'completed'), 'the one token left is still there');
});

test('a client that leaves while its batch waits frees its place, and is not counted as overloaded', async () => {
  const { gw, seen, gates, open } = await gatedGateway({ 'team-a': { key: KEY_A, max_batches_in_flight: 1 } });
  const first = gw.post({ request_id: 'first', inputs: [mkInput(1)] }, A);
  await waitFor('the first batch at the agent', () => gates.length === 1);
  const leaving = new AbortController();
  const gone = gw.call('/v1/responses', { method: 'POST', body: { request_id: 'gone', inputs: [mkInput(2)] }, headers: A, signal: leaving.signal });
  await waitFor('the second batch waiting', () => waiting(gw, 'team-a') === 1);
  leaving.abort();
  await assert.rejects(gone);
  await waitFor('the abandoned batch out of the queue', () => waiting(gw, 'team-a') === 0);
  const next = gw.post({ request_id: 'next', inputs: [mkInput(3)] }, A);
  await waitFor('the next batch waiting', () => waiting(gw, 'team-a') === 1);
  open();
  assert.equal((await first).status, 200);
  assert.equal((await next).status, 200);
  assert.deepEqual(seen, ['first', 'next'], 'the batch whose client left never reached the backend');
  assert.equal(await metric(gw, 'magma_gateway_client_limit_overloaded_total{client="team-a",limit="batches_in_flight"}'), 0);
});

test('limits are per client: another client is served while one client\'s batch waits', async () => {
  const { gw, gates, open } = await gatedGateway({
    'team-a': { key: KEY_A, max_batches_in_flight: 1 },
    'team-b': { key: KEY_B, max_batches_in_flight: 1 },
  });
  const a1 = gw.post({ request_id: 'a1', inputs: [mkInput(1)] }, A);
  await waitFor('a1 at the agent', () => gates.length === 1);
  const a2 = gw.post({ request_id: 'a2', inputs: [mkInput(2)] }, A);
  await waitFor('a2 waiting', () => waiting(gw, 'team-a') === 1);
  const b1 = gw.post({ request_id: 'b1', inputs: [mkInput(3)] }, B);
  await waitFor('b1 at the agent, past team-a\'s queue', () => gates.length === 2);
  assert.equal(waiting(gw, 'team-b'), 0);
  const gauge = await metric(gw, 'magma_gateway_client_limit_waiting{client="team-a"}');
  assert.equal(gauge, 1, 'the waiting gauge says so');
  open();
  for (const r of [a1, a2, b1]) assert.equal((await r).status, 200);
});
