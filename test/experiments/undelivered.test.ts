/**
 * A batch whose client went away before its answer (docs/experiments.md#replays-and-resumed-episodes): nothing of it
 * is counted or indexed, and the same request sent again counts each of its steps once, on the memory store and on
 * Redis.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput, postOk, type TestGateway } from '../helpers/gateway.js';
import { deleteKeys, sharedRedis, uniquePrefix } from '../state/helpers.js';
import { waitFor } from '../helpers/wait.js';
import { abandon, holdWhenAsked } from './bench-driver.js';

const f = useFixtures();

async function counts(gw: TestGateway): Promise<{ trajectories: number; steps: number; errors: number }> {
  await gw.app.gateway.experiments.settled();
  await gw.app.gateway.store.counters.flush();
  const r = (await (await fetch(`${gw.adminUrl}/gateway/experiments`)).json()) as ExperimentsReport;
  const arms = r.experiments[0]?.arms ?? [];
  const sum = (k: (a: (typeof arms)[number]) => number): number => arms.reduce((x, a) => x + k(a), 0);
  return { trajectories: sum((a) => a.trajectories), steps: sum((a) => a.steps), errors: sum((a) => a.candidates.error) };
}

for (const store of ['memory', 'redis'] as const) {
  test(`${store}: a batch its client left counts nothing; sent again, each of its steps counts once`, async () => {
    const prefix = uniquePrefix();
    f.defer(() => deleteKeys(prefix));
    const [x, y] = await Promise.all([f.agent({ name: 'x', behaviour: holdWhenAsked }), f.agent({ name: 'y', behaviour: holdWhenAsked })]);
    const gw = await f.gateway({
      backends: { x: { url: x.url }, y: { url: y.url } },
      routes: [{ name: 'ab', split: { x: 1, y: 1 } }],
      ...(store === 'redis' ? { state: { redis: sharedRedis(prefix) } } : {}),
    });
    const first = await postOk(gw, `u-${store}-1`, [0, 1, 2, 3].map((i) => mkInput(i, { instruction: { type: 'user', content: `task ${i}` } })));
    assert.deepEqual(await counts(gw), { trajectories: 4, steps: 4, errors: 0 });

    const second = { request_id: `u-${store}-2`, inputs: first.map((c) => mkInput(c.source_id, { instruction: { type: 'env', content: 'feedback' }, memory: c.memory, extra_keys: { hold: true } })) };
    await abandon(gw, second);
    // The batch ends once the gateway has cancelled its calls: it is then in the console's list.
    await waitFor('the abandoned batch to end', async () => (await (await fetch(`${gw.adminUrl}/gateway/batches`)).text()).includes(second.request_id));
    assert.deepEqual(await counts(gw), { trajectories: 4, steps: 4, errors: 0 }, 'the abandoned batch counted nothing, its cancelled candidates included');
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /magma_gateway_candidate_errors_total\{[^}]*code="gateway_client_closed"[^}]*\} [1-9]/);
    assert.doesNotMatch(metrics, /candidate_errors_total\{[^}]*code="gateway_backend_timeout"\} [1-9]/, 'a client that left is not a backend timeout');

    x.setBehaviour({});
    y.setBehaviour({});
    const res = await gw.post(second);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(await counts(gw), { trajectories: 4, steps: 8, errors: 0 }, 'the same request again counts its steps once');
  });
}
