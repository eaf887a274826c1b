/**
 * A coaching body is read under the memory budget and the tree parsed over it is counted before it is built
 * (docs/memory-budget.md#what-is-counted): while an older batch holds the budget, a small body of many elements
 * waits, is answered the budget's 503 past server.admission_timeout_s, or goes on once room comes; held returns
 * to zero after it. Real loopback agents and clients; the held count read from `magma_gateway_memory_budget_held_bytes`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAgentServer } from '../../demo/agents/agent-server.js';
import { jsonTreeEstimate } from '../../src/coaching/tree-estimate.js';
import { useFixtures, type Fixtures } from '../helpers/fixtures.js';
import { mkInput, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const BUDGET = 64 * 1024;
const COACHING = { capabilities: { inference: true, coaching: true }, specialized_coaching: ['failure'] };

async function metric(gw: TestGateway, name: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

const held = (gw: TestGateway): Promise<number> => metric(gw, 'magma_gateway_memory_budget_held_bytes');

/** About 10 KB of text whose parsed tree is over the budget: 5000 numbers in one list. */
const BODY = JSON.stringify({
  run_id: 'r',
  request_id: 'coach-r',
  kind: 'failure',
  target_step_id: 's0',
  trajectory: [
    {
      step_id: 's0',
      input: mkInput(1, { memory: { _gateway: { backend: 'c', route: 'coach' }, list: Array.from({ length: 5000 }, () => 0) } }),
      output: { say: 'x', tool_calls: [] },
      error: null,
    },
  ],
  reinjection_points: [{ id: 'p0' }],
});

/**
 * A gateway over two agents: `g` holds each batch until the test opens it (the older batch holding the budget),
 * `c` coaches. Its first batch, with 30 KB of memory, is at `g` when this returns.
 */
async function setup(f: Fixtures, admissionTimeoutS: number): Promise<{ gw: TestGateway; coached: () => number; open: () => void; first: Promise<{ status: number }> }> {
  const gates: (() => void)[] = [];
  const g = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async () => {
      await new Promise<void>((resolve) => gates.push(resolve));
      return { say: 'done' };
    },
  });
  f.defer(() => g.close());
  const c = await f.agent({ name: 'c', behaviour: { info: COACHING, coaching: { requireSession: false } } });
  const gw = await f.gateway({
    server: { memory_budget_mb: BUDGET / (1024 * 1024), admission_timeout_s: admissionTimeoutS },
    backends: { g: { url: g.url }, c: { url: c.url } },
    routes: [
      { name: 'coach', match: { 'attributes.scenario': 'coach' }, backend: 'c' },
      { name: 'd', backend: 'g' },
    ],
  });
  // Before the gateway closes (it waits for its batches): the held batch is let go.
  f.defer(() => gates.forEach((go) => go()));
  const first = gw.post({ request_id: 'older', inputs: [mkInput(2, { memory: { pad: 'p'.repeat(30_000) } })] });
  await waitFor('the older batch at its agent', () => gates.length === 1);
  return { gw, coached: () => c.requestsTo('/v1/coaching').length, open: () => gates.forEach((go) => go()), first };
}

const coach = (gw: TestGateway): Promise<Response> =>
  fetch(`${gw.url}/v1/coaching`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });

test('the estimate of a parsed tree is several times the bytes of a body of many small elements', () => {
  assert.ok(jsonTreeEstimate(BODY) > 10 * BODY.length, `${jsonTreeEstimate(BODY)} for ${BODY.length} bytes`);
  assert.ok(jsonTreeEstimate(BODY) > BUDGET && BODY.length < BUDGET / 4);
  // Strings cost their characters, two bytes each in a string with any character past U+00FF.
  assert.equal(jsonTreeEstimate('"abcd"'), 16 + 4);
  assert.equal(jsonTreeEstimate('"abc\u0100"'), 16 + 8);
  assert.equal(jsonTreeEstimate('{"a":[1,-2.5,true]}'), 64 + (16 + 1) + 72 + 56 + 16 + 8 + 16 + 8);
});

test('a number parseExact keeps as a marker (`1.0`, a big integer) is charged as one, and the text\'s marked copies', () => {
  // `[1.0]`: the array, the number, its marker (338 + 6 a character) and two two-byte copies of the text.
  assert.equal(jsonTreeEstimate('[1.0]'), 56 + 16 + 338 + 6 * 3 + 4 * 5);
  assert.equal(jsonTreeEstimate('[1.5]'), 56 + 16, 'a number read back as written is a plain number');
  // 344 bytes a 20-digit integer measured: `node --expose-gc`, heapUsed after parseExact + stringifyExact of
  // 300,000 of them, less before (103.24 MB), the estimate 5 times under it before markers were counted.
  const bigInts = `[${Array(1000).fill('12345678901234567890').join(',')}]`;
  assert.ok(jsonTreeEstimate(bigInts) >= 1000 * 344, `${jsonTreeEstimate(bigInts)}`);
});

test('a coaching body whose parsed tree has no room waits, then gets the budget\'s 503; held returns to zero', async (t) => {
  const f = useFixtures(t);
  const { gw, coached, open, first } = await setup(f, 1);
  const res = await coach(gw);
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('retry-after'), '5');
  const body = (await res.json()) as { code: string; detail: string };
  assert.equal(body.code, 'GATEWAY_ERR_MEMORY_BUDGET');
  assert.match(body.detail, /server\.admission_timeout_s \(1 s\)/);
  assert.equal(coached(), 0, 'nothing reached the coaching agent');
  assert.equal(await metric(gw, 'magma_gateway_admission_timeouts_total'), 1);
  open();
  assert.equal((await first).status, 200);
  await waitFor('everything given back', async () => (await held(gw)) === 0);
});

test('a coaching body whose parsed tree has no room waits for it, counted meanwhile, and goes on once the older batch is answered', async (t) => {
  const f = useFixtures(t);
  const { gw, coached, open, first } = await setup(f, 60);
  const before = await held(gw);
  const res = coach(gw);
  await waitFor('the tree counted before it is built', async () => (await held(gw)) >= before + jsonTreeEstimate(BODY));
  assert.equal(coached(), 0, 'it waits');
  open();
  assert.equal((await first).status, 200);
  const answer = await res;
  assert.equal(answer.status, 200, await answer.clone().text());
  assert.equal(coached(), 1);
  await waitFor('everything given back', async () => (await held(gw)) === 0);
});

test('a coaching client that leaves while its tree waits for room: nothing is built or forwarded, held returns to zero', async (t) => {
  const f = useFixtures(t);
  const { gw, coached, open, first } = await setup(f, 60);
  const before = await held(gw);
  const abort = new AbortController();
  const res = fetch(`${gw.url}/v1/coaching`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, signal: abort.signal });
  res.catch(() => undefined);
  await waitFor('the tree counted, waiting', async () => (await held(gw)) >= before + jsonTreeEstimate(BODY));
  abort.abort();
  await waitFor('the coaching request\'s hold given back', async () => (await held(gw)) === before);
  open();
  assert.equal((await first).status, 200);
  await waitFor('everything given back', async () => (await held(gw)) === 0);
  assert.equal(coached(), 0, 'nothing reached the coaching agent');
});
