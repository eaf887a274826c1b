/**
 * docs/deployment.md#several-gateway-replicas-redis: three gateway processes, started as a user starts them (CLI + YAML),
 * sharing one real Redis.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { waitFor, waitHealthy } from '../helpers/wait.js';
import { gatewayAt, mkInput, type Cand, type RemoteGateway } from '../helpers/gateway.js';
import { deleteKeys, freePort, killHard, REDIS_URL, startRedisServer, uniquePrefix } from '../state/helpers.js';
import type { HttpAnswer } from '../helpers/config-file.js';
import { useFixtures } from '../helpers/fixtures.js';

const CLI = join(process.cwd(), 'dist/src/cli.js');
const dir = mkdtempSync(join(tmpdir(), 'mgw-cluster-'));
const procs: ChildProcess[] = [];
const prefix = uniquePrefix();

interface Gw extends RemoteGateway {
  child: ChildProcess;
}

async function startGatewayProcess(agentUrl: string, redisUrl: string, keyPrefix: string, extra = ''): Promise<Gw> {
  const port = await freePort();
  const path = join(dir, `gw-${port}.yaml`);
  writeFileSync(
    path,
    [
      `server: { port: ${port} }`,
      'log_level: warn',
      'probe_interval_s: 1',
      `state: { redis: { url: "${redisUrl}", key_prefix: "${keyPrefix}" }, lease_s: 2 }`,
      'backends:',
      // queue_timeout_s bounds a wait for a permit: past it the sub-request becomes an error candidate.
      `  gpu: { url: "${agentUrl}", max_in_flight: 2, queue_timeout_s: 10, timeout_s: 30, eject_after_failures: 1000 }`,
      'routes:',
      '  - name: default',
      '    backend: gpu',
      extra,
    ].join('\n'),
  );
  const child = spawn(process.execPath, [CLI, '--config', path], { stdio: ['ignore', 'ignore', 'inherit'] });
  procs.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url);
  return { ...gatewayAt(url), child };
}

/** The candidates of a batch answer. */
const cands = (res: HttpAnswer): Cand[] => (res.status === 200 ? (res.json as Cand[]) : []);

let agent: FakeAgent;
let gws: Gw[] = [];

before(async () => {
  agent = await startFakeAgent({ name: 'gpu', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 60 } : {}) });
  gws = await Promise.all([0, 1, 2].map(() => startGatewayProcess(agent.url, REDIS_URL, prefix)));
});

after(async () => {
  for (const p of procs) p.kill('SIGKILL');
  await agent.close();
  await deleteKeys(prefix);
});

test('max_in_flight 2 holds across three gateways under load from all three', async () => {
  agent.reset();
  const jobs = Array.from({ length: 30 }, (_, i) => gws[i % 3]!.post({ request_id: `load-${i}`, inputs: [mkInput(i)] }));
  const results = await Promise.all(jobs);
  assert.ok(results.every((r) => r.status === 200 && cands(r)[0]!.status === 'completed'));
  assert.equal(agent.requestsTo('/v1/responses').length, 30);
  assert.ok(agent.maxInFlight <= 2, `the backend saw ${agent.maxInFlight} concurrent sub-requests`);
  assert.equal(agent.maxInFlight, 2, 'the limit was reached, so the test measured something');
});

test('a replay sent to a different gateway reaches no backend', async () => {
  const body = { request_id: 'replay-1', inputs: [mkInput(1, { memory: { n: 1 } })] };
  const first = await gws[0]!.post(body);
  assert.equal(first.status, 200);
  const before = agent.requestsTo('/v1/responses').length;
  const again = await gws[1]!.post(body);
  assert.equal(again.headers.get('x-gateway-replay'), 'hit');
  assert.deepEqual(cands(again), cands(first));
  assert.equal(agent.requestsTo('/v1/responses').length, before);
});

test('a duplicate sent while the first is in flight is computed once', async () => {
  agent.setBehaviour((r) => (r.path === '/v1/responses' ? { delayMs: 400 } : {}));
  try {
    const body = { request_id: 'dup-1', inputs: [mkInput(1)] };
    const before = agent.requestsTo('/v1/responses').length;
    const a = gws[0]!.post(body);
    await waitFor('the first at the agent', () => agent.inFlight === 1);
    const [ra, rb] = await Promise.all([a, gws[2]!.post(body)]);
    assert.deepEqual(cands(ra), cands(rb));
    assert.equal(agent.requestsTo('/v1/responses').length - before, 1);
  } finally {
    agent.setBehaviour((r) => (r.path === '/v1/responses' ? { delayMs: 60 } : {}));
  }
});

test('a killed gateway gives its permits back within the lease time, so a waiting batch is served', async () => {
  agent.setBehaviour((r) => (r.path === '/v1/responses' ? { delayMs: (r.body as { request_id: string }).request_id.startsWith('hold') ? 20_000 : 60 } : {}));
  try {
    const victim = gws[2]!;
    // Two batches hold both permits through the victim, then it dies without releasing them.
    void victim.post({ request_id: 'hold-1', inputs: [mkInput(1)] }).catch(() => undefined);
    void victim.post({ request_id: 'hold-2', inputs: [mkInput(2)] }).catch(() => undefined);
    await waitFor('both batches at the agent', () => agent.inFlight === 2);
    await killHard(victim.child);
    // Both permits are held by a dead process that never releases them: only their lease (lease_s 2) lapsing
    // frees one, and it must do so before this batch's permit wait ends at queue_timeout_s (10 s).
    const res = await gws[0]!.post({ request_id: 'after-kill', inputs: [mkInput(3)] });
    assert.equal(cands(res)[0]!.status, 'completed', JSON.stringify(cands(res)[0]!.error));
    assert.equal(agent.requestsTo('/v1/responses').filter((r) => (r.body as { request_id: string }).request_id === 'after-kill').length, 1);
  } finally {
    agent.setBehaviour((r) => (r.path === '/v1/responses' ? { delayMs: 60 } : {}));
  }
});

test('Redis killed and restarted mid-load loses no batch', async (t) => {
  const f = useFixtures(t);
  const port = await freePort();
  let redis = await startRedisServer(port);
  f.defer(() => killHard(redis));
  const url = `redis://127.0.0.1:${port}`;
  const gw = await startGatewayProcess(agent.url, url, uniquePrefix());
  f.defer(() => gw.child.kill('SIGKILL'));
  let stop = false;
  const statuses: string[] = [];
  const loader = (async () => {
    for (let i = 0; !stop; i++) {
      const r = await gw.post({ request_id: `rk-${i}`, inputs: [mkInput(i)] });
      statuses.push(r.status === 200 ? cands(r)[0]!.status : `http-${r.status}`);
    }
  })();
  const storeUp = async (): Promise<string> => (await (await fetch(`${gw.url}/metrics`)).text()).match(/^magma_gateway_store_up (\d)$/m)?.[1] ?? '?';
  const flowed = async (n: number): Promise<void> => {
    const target = statuses.length + n;
    await waitFor(`${n} more batches answered`, () => statuses.length >= target, { timeoutMs: 10_000 });
  };
  await flowed(5);
  await killHard(redis);
  await waitFor('the gateway seeing Redis down', async () => (await storeUp()) === '0', { timeoutMs: 10_000 });
  await flowed(5);
  const metricsDown = await (await fetch(`${gw.url}/metrics`)).text();
  redis = await startRedisServer(port);
  await waitFor('the gateway seeing Redis back', async () => (await storeUp()) === '1', { timeoutMs: 10_000 });
  await flowed(5);
  stop = true;
  await loader;
  const metricsUp = await (await fetch(`${gw.url}/metrics`)).text();
  assert.ok(statuses.length > 10, `load kept flowing (${statuses.length} batches)`);
  assert.deepEqual([...new Set(statuses)], ['completed']);
  assert.match(metricsDown, /^magma_gateway_store_up 0$/m);
  assert.match(metricsUp, /^magma_gateway_store_up 1$/m);
});
