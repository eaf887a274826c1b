/**
 * One deadline per batch and a retry budget (docs/routing.md#fallbacks-deadline-and-retry-budget): failover cannot run past request_timeout_s nor snowball.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkInput, type Cand } from '../helpers/gateway.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';

test('the batch deadline cuts a fallback chain: no fallback starts once time is up', async (t) => {
  const f = useFixtures(t);
  const slow1 = await f.agent({ name: 's1', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 5000 } : {}) });
  const slow2 = await f.agent({ name: 's2', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 5000 } : {}) });
  const last = await f.agent({ name: 'last' });
  const gw = await f.gateway(oneBackend({ s1: { url: slow1.url, timeout_s: 0.4, eject_after_failures: 100 }, s2: { url: slow2.url, timeout_s: 0.4, eject_after_failures: 100 }, last }, { route: { fallback: ['s2', 'last'] }, request_timeout_s: 0.6 }));
  const res = await gw.post({ request_id: 'd', inputs: [mkInput(1)] });
  const [c] = res.json as Cand[];
  assert.equal(res.status, 200);
  assert.equal(c!.status, 'error');
  assert.equal(c!.error!.code, 'gateway_backend_timeout');
  // s1 timed out at its timeout_s (0.4 s) and s2 was tried; the deadline (0.6 s) came before s2's own timeout,
  // so the answer came with s2 still working and `last`, which would have answered, never asked.
  assert.equal(slow1.requestsTo('/v1/responses').length, 1);
  assert.equal(slow2.requestsTo('/v1/responses').length, 1, 'the first fallback started within the deadline');
  assert.equal(last.requestsTo('/v1/responses').length, 0, 'the last fallback never started');
});

test('over the retry budget, failures become error candidates at once and are counted', async (t) => {
  const f = useFixtures(t);
  const bad = await f.agent({ name: 'bad', behaviour: (r) => (r.path === '/v1/responses' ? { status: 500, delayMs: 50 } : {}) });
  const good = await f.agent({ name: 'good', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 300 } : {}) });
  const gw = await f.gateway(oneBackend({ bad: { url: bad.url, eject_after_failures: 1000 }, good }, { route: { fallback: ['good'] }, retry_budget: { ratio: 0, min: 2 } }));
  // A burst of 8 concurrent batches all failing on `bad`: at most 2 fallbacks may be in flight at once.
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => gw.post({ request_id: `b${i}`, inputs: [mkInput(i)] })));
  const cands = results.map((r) => (r.json as Cand[])[0]!);
  assert.ok(results.every((r) => r.status === 200));
  const fellBack = cands.filter((c) => c.status === 'completed').length;
  const refused = cands.filter((c) => c.status === 'error');
  assert.ok(fellBack >= 2 && fellBack < 8, `some fell back (${fellBack}), not all`);
  assert.ok(refused.every((c) => c.error!.code === 'gateway_backend_http_error' && /retry budget/.test(c.error!.message)));
  assert.ok(good.maxInFlight <= 2, `fallbacks in flight stayed within the budget (${good.maxInFlight})`);
  const m = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(m, new RegExp(`magma_gateway_retry_budget_exhausted_total\\{backend="good"\\} ${refused.length}`));
});
