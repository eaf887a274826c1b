/**
 * Hot reload of client keys and limits (docs/operations.md#client-keys and docs/operations.md#hot-reload): keys are read from the running
 * config, so a reload adds, changes and removes clients for the next request; each client's limiter keeps its
 * state by name and takes the new limits; the reload report names clients, never keys.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAgentServer } from '../demo/agents/agent-server.js';
import type { FileGateway } from './helpers/config-file.js';
import { oneBackend, useFixtures } from './helpers/fixtures.js';
import { mkInput } from './helpers/gateway.js';
import { waitFor } from './helpers/wait.js';

const OLD_KEY = 'reload-old-key-0123456789ab';
const NEW_KEY = 'reload-new-key-0123456789ab';
const B_KEY = 'reload-b-key-0123456789abcd';

const f = useFixtures();

function config(url: string, clients: Record<string, unknown> | undefined): Record<string, unknown> {
  return oneBackend({ a: url }, clients === undefined ? {} : { clients });
}

async function status(gw: FileGateway, key: string | undefined): Promise<number> {
  const res = await gw.call('/v1/info', { headers: key === undefined ? {} : { 'x-api-key': key } });
  return res.status;
}

async function batchStatus(gw: FileGateway, key: string): Promise<number> {
  return (await gw.call(`/k/${key}/v1/responses`, { method: 'POST', body: { request_id: 'r', inputs: [mkInput(1)] } })).status;
}

test('a reload that changes a key refuses the old key and serves the new one, on both fronts; the report names the client only', async () => {
  const agent = await f.agent({ name: 'a' });
  const gw = await f.fileGateway(config(agent.url, { 'team-a': { key: OLD_KEY } }));
  assert.equal(await status(gw, OLD_KEY), 200);
  assert.equal(await batchStatus(gw, OLD_KEY), 200);

  const res = await gw.reload(config(agent.url, { 'team-a': { key: NEW_KEY }, 'team-b': { key: B_KEY } }));
  assert.equal(res.status, 200, res.text);
  const report = res.json as { clients: { added: string[]; removed: string[]; changed: string[] } };
  assert.deepEqual(report.clients, { added: ['team-b'], removed: [], changed: ['team-a'] });
  assert.ok(!res.text.includes(OLD_KEY) && !res.text.includes(NEW_KEY) && !res.text.includes(B_KEY), res.text);

  assert.equal(await status(gw, OLD_KEY), 401);
  assert.equal(await batchStatus(gw, OLD_KEY), 401);
  assert.equal(await status(gw, NEW_KEY), 200);
  assert.equal(await batchStatus(gw, NEW_KEY), 200);
  assert.equal(await status(gw, B_KEY), 200);
});

test('a reload removes a client, and removing clients: opens every endpoint again; adding it closes them', async () => {
  const agent = await f.agent({ name: 'a' });
  const gw = await f.fileGateway(config(agent.url, { 'team-a': { key: OLD_KEY }, 'team-b': { key: B_KEY } }));
  assert.equal(await status(gw, undefined), 401);

  assert.equal((await gw.reload(config(agent.url, { 'team-b': { key: B_KEY } }))).status, 200);
  assert.equal(await status(gw, OLD_KEY), 401);
  assert.equal(await status(gw, B_KEY), 200);

  const open = await gw.reload(config(agent.url, undefined));
  assert.deepEqual((open.json as { clients: unknown }).clients, { added: [], removed: ['team-b'], changed: [] });
  assert.equal(await status(gw, undefined), 200);
  assert.equal((await gw.call(`/k/${B_KEY}/v1/info`)).status, 404, 'a /k/ address without clients: names the missing section');

  assert.equal((await gw.reload(config(agent.url, { 'team-a': { key: NEW_KEY } }))).status, 200);
  assert.equal(await status(gw, undefined), 401);
  assert.equal(await status(gw, NEW_KEY), 200);
});

test('a reload keeps a client\'s batches in flight under its limit, and a raised limit serves the batch waiting for it', async () => {
  const gates: (() => void)[] = [];
  let released = false;
  const agent = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async () => {
      if (!released) await new Promise<void>((resolve) => gates.push(resolve));
      return { say: 'done' };
    },
  });
  f.defer(() => agent.close());
  const limited = (max: number): Record<string, unknown> => config(agent.url, { 'team-a': { key: OLD_KEY, max_batches_in_flight: max } });
  const gw = await f.fileGateway(limited(1));
  const keyed = `/k/${OLD_KEY}/v1/responses`;
  const waiting = (): number => gw.app.gateway.clients.limiterOf('team-a')?.waiting ?? 0;

  const first = gw.call(keyed, { method: 'POST', body: { request_id: 'first', inputs: [mkInput(1)] } });
  await waitFor('the first batch at the agent', () => gates.length === 1);
  // Same limit, another max_wait_s: the slot the first batch holds is still held after the reload.
  assert.equal((await gw.reload({ ...limited(1), clients: { 'team-a': { key: OLD_KEY, max_batches_in_flight: 1, max_wait_s: 60 } } })).status, 200);
  const second = gw.call(keyed, { method: 'POST', body: { request_id: 'second', inputs: [mkInput(1)] } });
  await waitFor('the second batch waiting for the slot', () => waiting() === 1);
  assert.equal(gates.length, 1);

  assert.equal((await gw.reload(limited(2))).status, 200);
  await waitFor('the second batch at the agent once the limit is 2', () => gates.length === 2);
  released = true;
  for (const g of gates.splice(0)) g();
  await Promise.all([first, second]);
});
