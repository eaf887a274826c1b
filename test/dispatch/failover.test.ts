/**
 * Failover when a backend is down (docs/protocol-fidelity.md#failures and docs/routing.md#fallbacks-deadline-and-retry-budget): a backend with no ready
 * replica is not attempted and its inputs go straight to the fallback without spending the retry budget, and a
 * refused connection takes the replica out of rotation at once. So a dead primary under many concurrent clients
 * still has (nearly) every candidate completed by the fallback, every answer whole and in order.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BackendView } from '../../src/admin/views.js';
import { http } from '../helpers/config-file.js';
import { startFakeAgent } from '../helpers/fake-agent.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { oneBackend, useFixtures, type Fixtures } from '../helpers/fixtures.js';

const CLIENTS = 20;
const BATCHES = 25;
const INPUTS = 4;
const OUTPUTS = 2;

interface Tally {
  batches: number;
  httpErrors: number;
  misordered: number;
  completed: number;
  byFallback: number;
  errors: Record<string, number>;
}

/** CLIENTS concurrent clients, each sending BATCHES batches one after the other; every answer is checked. */
async function load(gw: TestGateway, tag: string): Promise<Tally> {
  const t: Tally = { batches: 0, httpErrors: 0, misordered: 0, completed: 0, byFallback: 0, errors: {} };
  const expected = Array.from({ length: INPUTS }, (_, i) => Array.from({ length: OUTPUTS }, (_, c) => [i, c])).flat();
  const client = async (k: number): Promise<void> => {
    for (let n = 0; n < BATCHES; n++) {
      const inputs = Array.from({ length: INPUTS }, (_, i) => mkInput(i, { num_outputs: OUTPUTS, memory: { client: k, n } }));
      const res = await gw.post({ request_id: `${tag}-${k}-${n}`, inputs });
      t.batches++;
      if (res.status !== 200 || !Array.isArray(res.json)) {
        t.httpErrors++;
        continue;
      }
      const cands = res.json as Cand[];
      if (JSON.stringify(cands.map((c) => [c.source_id, c.candidate_index])) !== JSON.stringify(expected)) t.misordered++;
      for (const c of cands) {
        assert.deepEqual([c.memory.client, c.memory.n], [k, n], 'each candidate keeps its own input memory');
        if (c.status === 'completed') {
          t.completed++;
          if (c.memory._gateway?.backend === 'fallback' && c.memory.seen_by === 'fallback') t.byFallback++;
        } else {
          const code = `${c.error?.code}: ${c.error?.message}`;
          t.errors[code] = (t.errors[code] ?? 0) + 1;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, k) => client(k)));
  return t;
}

function assertFailedOver(t: Tally, what: string): void {
  const total = CLIENTS * BATCHES * INPUTS * OUTPUTS;
  console.log(`${what}: ${t.batches} batches, ${t.completed}/${total} candidates completed (${t.byFallback} by the fallback), errors ${JSON.stringify(t.errors)}`);
  assert.equal(t.batches, CLIENTS * BATCHES);
  assert.equal(t.httpErrors, 0, 'no HTTP error');
  assert.equal(t.misordered, 0, 'every answer whole and in order');
  assert.ok(t.byFallback >= 0.99 * total, `at least 99% completed by the fallback: ${t.byFallback} of ${total}`);
}

async function closedPort(): Promise<string> {
  const a = await startFakeAgent({ name: 'gone' });
  await a.close();
  return a.url;
}

function gateway(fx: Fixtures, primaryUrl: string, fallbackUrl: string, over: Record<string, unknown> = {}): Promise<TestGateway> {
  return fx.gateway(oneBackend({ primary: primaryUrl, fallback: fallbackUrl }, { route: { fallback: ['fallback'] }, ...over }));
}

async function primaryReplica(gw: TestGateway): Promise<BackendView['replicas'][number]> {
  const view = (await http(`${gw.adminUrl}/gateway/backends`)).json as { backends: BackendView[] };
  return view.backends.find((b) => b.name === 'primary')!.replicas[0]!;
}

test('primary port closed from the start: 20 clients have >= 99% of candidates completed by the fallback', async (t) => {
  const fx = useFixtures(t);
  const fallback = await fx.agent({ name: 'fallback' });
  const gw = await gateway(fx, await closedPort(), fallback.url);
  assert.equal((await primaryReplica(gw)).state, 'not_ready', 'the first probe found it down');
  const tally = await load(gw, 'closed');
  assertFailedOver(tally, 'primary closed');
  const m = (await http(`${gw.url}/metrics`)).text;
  // The series exist from the start at 0 (docs/operations.md#metrics); none may have moved.
  assert.doesNotMatch(m, /^magma_gateway_retry_budget_exhausted_total\{[^}]*\} [1-9]/m, 'moving on from a backend with no replica is no retry');
});

test('primary killed after its probe said ready: the first refused connection takes it out, no probe needed', async (t) => {
  const fx = useFixtures(t);
  const primary = await fx.agent({ name: 'primary' });
  const fallback = await fx.agent({ name: 'fallback' });
  const gw = await gateway(fx, primary.url, fallback.url);
  assert.equal((await primaryReplica(gw)).state, 'ready');
  primary.kill();
  const tally = await load(gw, 'killed');
  assertFailedOver(tally, 'primary killed');
  const r = await primaryReplica(gw);
  assert.equal(r.state, 'not_ready', 'out of rotation by the refused connection alone (probe_interval_s is an hour)');
  assert.match(r.last_error ?? '', /ECONNREFUSED/);
});

test('with no fallback, a refused connection answers gateway_backend_unreachable, then gateway_no_backend', async (t) => {
  const fx = useFixtures(t);
  const only = await fx.agent({ name: 'only' });
  const gw = await fx.gateway(oneBackend({ only: only.url }));
  only.kill();
  const codes: string[] = [];
  for (let i = 0; i < 2; i++) {
    const body = JSON.stringify({ request_id: `nf-${i}`, inputs: [mkInput(1, { memory: { big: '<big>' } })] });
    const res = await gw.post(body.replace('"<big>"', '12345678901234567890'));
    assert.equal(res.status, 200);
    assert.match(res.text, /"big":12345678901234567890[,}]/, 'the memory is kept digit for digit');
    const [c] = res.json as Cand[];
    assert.equal(c!.status, 'error');
    codes.push(c!.error!.code);
  }
  assert.deepEqual(codes, ['gateway_backend_unreachable', 'gateway_no_backend']);
});

test('inputs that got no max_in_flight permit move to the fallback without the retry budget; real failures need it', async (t) => {
  const fx = useFixtures(t);
  const busy = await fx.agent({ name: 'busy', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 1000 } : {}) });
  const fallback = await fx.agent({ name: 'fallback' });
  const gw = await gateway(fx, busy.url, fallback.url, {
    retry_budget: { ratio: 0, min: 0 },
    backends: { primary: { url: busy.url, max_in_flight: 1, queue_timeout_s: 0.05 }, fallback: { url: fallback.url } },
  });
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => gw.post({ request_id: `ov-${i}`, inputs: [mkInput(i)] })));
  const served = results.map((r) => {
    assert.equal(r.status, 200);
    const [c] = r.json as Cand[];
    assert.equal(c!.status, 'completed', JSON.stringify(c!.error));
    return String(c!.memory.seen_by);
  });
  assert.equal(served.filter((s) => s === 'busy').length, 1, 'one permit, one sub-request on the primary');
  assert.equal(served.filter((s) => s === 'fallback').length, 7);

  // The same budget (none) refuses a fallback after a failure the backend answered.
  busy.setBehaviour((r) => (r.path === '/v1/responses' ? { status: 500 } : {}));
  const [c] = (await gw.post({ request_id: 'ov-500', inputs: [mkInput(9)] })).json as Cand[];
  assert.equal(c!.error?.code, 'gateway_backend_http_error');
  assert.match(c!.error?.message ?? '', /retry budget exhausted/);
});
