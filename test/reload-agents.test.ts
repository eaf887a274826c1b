/**
 * Hot reload of virtual agents (docs/operations.md#hot-reload and docs/routing.md#virtual-agents), from a config file against real loopback
 * agents: a reload adds, changes and removes agents; a batch in flight on an agent the reload removes finishes
 * on the old config, and requests after the reload get the 404.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startAgentServer, type AgentServer } from '../demo/agents/agent-server.js';
import { oneBackend, useFixtures } from './helpers/fixtures.js';
import { mkInput, type Cand } from './helpers/gateway.js';
import { waitFor } from './helpers/wait.js';

const f = useFixtures();

/** An agent that holds every batch whose request_id starts with `held` until `release()`. */
async function gatedAgent(): Promise<{ server: AgentServer; seen: string[]; release(): void }> {
  const seen: string[] = [];
  const gates: (() => void)[] = [];
  const server = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async (_input, ctx) => {
      seen.push(ctx.requestId);
      if (ctx.requestId.startsWith('held')) await new Promise<void>((resolve) => gates.push(resolve));
      return { say: 'gated' };
    },
  });
  f.defer(() => server.close());
  return { server, seen, release: () => gates.splice(0).forEach((g) => g()) };
}


const batch = (id: string): object => ({ request_id: id, inputs: [mkInput(1), mkInput(2)] });

test('a reload removes an agent while its batch is in flight: the batch completes, the next request is 404', async () => {
  const g = await gatedAgent();
  const other = await f.agent({ name: 'other' });
  const before = oneBackend({ other, g: g.server.url }, { agents: { kitchen: { routes: [{ name: 'main', backend: 'g' }] } } });
  const gw = await f.fileGateway(before);
  const first = gw.app.gateway.current;
  const inFlight = gw.call('/agents/kitchen/v1/responses', { method: 'POST', body: batch('held-1') });
  await waitFor('the held batch at the kitchen agent\'s backend', () => g.seen.includes('held-1'));

  const res = await gw.reload({ ...before, agents: { lab: { routes: [{ name: 'main', backend: 'other' }] } } });
  assert.equal(res.status, 200, res.text);
  const report = res.json as { agents: { added: string[]; removed: string[]; changed: string[]; not_ready_routes: Record<string, string[]> } };
  assert.deepEqual(report.agents, { added: ['lab'], removed: ['kitchen'], changed: [], not_ready_routes: {} });
  assert.notEqual(gw.app.gateway.current, first);

  const gone = await gw.call('/agents/kitchen/v1/responses', { method: 'POST', body: batch('after-1') });
  assert.equal(gone.status, 404);
  assert.equal((gone.json as { code: string }).code, 'GATEWAY_ERR_UNKNOWN_AGENT');
  const added = await gw.call('/agents/lab/v1/responses', { method: 'POST', body: batch('after-2') });
  assert.equal(added.status, 200, added.text);
  assert.deepEqual((added.json as Cand[]).map((c) => c.memory.seen_by), ['other', 'other']);
  assert.equal(first.upstreams.all().every((r) => r.pool.closed), false, 'the old pools stay open while its batch is in flight');

  g.release();
  const held = await inFlight;
  assert.equal(held.status, 200, held.text);
  assert.deepEqual((held.json as Cand[]).map((c) => [c.status, c.output?.say]), [['completed', 'gated'], ['completed', 'gated']]);
  await waitFor('the old config drained and closed its pools', () => first.upstreams.all().every((r) => r.pool.closed));
});

test('a reload changes an agent\'s routes, identity and memory key for the next batch, and warns of the key', async () => {
  const [x, y] = [await f.agent({ name: 'x' }), await f.agent({ name: 'y' })];
  const config = (backend: string, agent: Record<string, unknown>): Record<string, unknown> => ({
    backends: { x: { url: x.url }, y: { url: y.url } },
    agents: { lab: { ...agent, routes: [{ name: 'main', backend }] } },
  });
  const gw = await f.fileGateway(config('x', {}));
  const before = await gw.call('/agents/lab/v1/responses', { method: 'POST', body: batch('c1') });
  assert.deepEqual((before.json as Cand[]).map((c) => c.memory.seen_by), ['x', 'x']);
  assert.equal(((await gw.call('/agents/lab/v1/info')).json as { agent_id: string }).agent_id, 'lab');

  const res = await gw.reload(config('y', { agent: { agent_id: 'lab-v2' }, memory_key: '_lab' }));
  assert.equal(res.status, 200, res.text);
  const report = res.json as { agents: { changed: string[] }; warnings: string[] };
  assert.deepEqual(report.agents.changed, ['lab']);
  assert.deepEqual(report.warnings, ['agents.lab: memory_key changed: trajectories tagged under the old key start over (no stickiness for them)']);
  const after1 = await gw.call('/agents/lab/v1/responses', { method: 'POST', body: batch('c2') });
  const cands = after1.json as (Cand & { memory: { _lab?: unknown } })[];
  assert.deepEqual(cands.map((c) => c.memory.seen_by), ['y', 'y']);
  assert.deepEqual(cands[0]!.memory._lab, { backend: 'y', route: 'main' });
  assert.equal(((await gw.call('/agents/lab/v1/info')).json as { agent_id: string }).agent_id, 'lab-v2');
});

test('a reload that gives an agent an unknown backend is refused, naming its location, and the agent keeps serving', async () => {
  const x = await f.agent({ name: 'x' });
  const config = (backend: string): Record<string, unknown> => ({
    backends: { x: { url: x.url } },
    agents: { lab: { routes: [{ name: 'main', backend }] } },
  });
  const gw = await f.fileGateway(config('x'));
  const res = await gw.reload(config('nope'));
  assert.equal(res.status, 400);
  assert.match((res.json as { detail: string }).detail, /agents\.lab\.routes\[0\]\.backend: unknown backend "nope"/);
  const still = await gw.call('/agents/lab/v1/responses', { method: 'POST', body: batch('k1') });
  assert.equal(still.status, 200);
});
