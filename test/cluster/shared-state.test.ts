/**
 * docs/deployment.md#several-gateway-replicas-redis: ejections and experiment counts are shared by gateway replicas through
 * Redis.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startFakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { deleteKeys, sharedRedis, uniquePrefix } from '../state/helpers.js';
import { oneBackend } from '../helpers/fixtures.js';

const prefix = uniquePrefix();
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
  await deleteKeys(prefix);
});

interface ReplicaView {
  url: string;
  state: string;
}

async function replicaStates(gw: TestGateway): Promise<ReplicaView[]> {
  const body = (await (await fetch(`${gw.adminUrl}/gateway/backends`)).json()) as { backends: { replicas: ReplicaView[] }[] };
  return body.backends.flatMap((b) => b.replicas);
}

test('a replica ejected by one gateway is ejected on the other within a probe interval', async () => {
  const good = await startFakeAgent({ name: 'good' });
  const flaky = await startFakeAgent({ name: 'flaky' });
  const config = oneBackend({ b: { urls: [good.url, flaky.url], eject_after_failures: 1 } }, { probe_interval_s: 1, state: { redis: sharedRedis(prefix) } });
  const a = await startGateway(config);
  const b = await startGateway(config);
  cleanup.push(async () => {
    await Promise.all([a.close(), b.close()]);
    await Promise.all([good.close(), flaky.close()]);
  });
  flaky.setBehaviour((r) => (r.path === '/v1/responses' ? { status: 500 } : {}));
  // Two inputs over two idle replicas: one lands on the flaky one, fails once, and is ejected on `a`.
  await a.post({ request_id: 'ej-1', inputs: [mkInput(1), mkInput(2)] });
  const flakyOn = async (gw: TestGateway): Promise<string | undefined> =>
    (await replicaStates(gw)).find((r) => r.url === flaky.url)?.state;
  assert.equal(await flakyOn(a), 'ejected');
  await waitFor('b follows the ejection', async () => (await flakyOn(b)) === 'ejected', { timeoutMs: 900 });
  // On b, traffic now avoids the flaky replica although b itself never saw it fail.
  flaky.reset();
  await b.post({ request_id: 'ej-2', inputs: [mkInput(1), mkInput(2), mkInput(3)] });
  assert.equal(flaky.requestsTo('/v1/responses').length, 0);
});

test('experiment counts are cluster totals: the report is the same on every gateway replica', async () => {
  const x = await startFakeAgent({ name: 'x' });
  const y = await startFakeAgent({ name: 'y' });
  const config = {
    state: { redis: sharedRedis(`${prefix}exp:`) },
    backends: { x: { url: x.url }, y: { url: y.url } },
    routes: [{ name: 'ab', split: { x: 50, y: 50 } }],
  };
  const a = await startGateway(config);
  const b = await startGateway(config);
  cleanup.push(async () => {
    await Promise.all([a.close(), b.close()]);
    await Promise.all([x.close(), y.close()]);
  });
  await a.post({ request_id: 'e1', inputs: [mkInput(1), mkInput(2), mkInput(3)] });
  await b.post({ request_id: 'e2', inputs: [mkInput(4), mkInput(5)] });
  const steps = async (gw: TestGateway): Promise<number> => {
    const rep = (await (await fetch(`${gw.adminUrl}/gateway/experiments`)).json()) as { experiments: { arms: { steps: number }[] }[] };
    return rep.experiments[0]!.arms.reduce((n, arm) => n + arm.steps, 0);
  };
  await waitFor('both see all 5 steps', async () => (await steps(a)) === 5 && (await steps(b)) === 5, { timeoutMs: 3000 });
});
