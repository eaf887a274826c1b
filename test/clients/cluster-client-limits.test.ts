/**
 * Client limits across gateway replicas (docs/limits-and-edges.md#client-limits-across-replicas): two
 * gateways on one Redis hold a client's max_batches_in_flight and max_candidates_per_minute together; with Redis
 * unavailable each holds its own limits and counts the batches it admitted alone.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { useFixtures, oneBackend } from '../helpers/fixtures.js';
import { mkInput, type Cand } from '../helpers/gateway.js';
import { deleteKeys, REDIS_URL, uniquePrefix } from '../state/helpers.js';

const f = useFixtures();
const prefix = uniquePrefix();
after(() => deleteKeys(prefix));
const KEY = 'team-key-0123456789abcdef';

function config(agentUrl: string, client: Record<string, unknown>, redisUrl = REDIS_URL): Record<string, unknown> {
  return oneBackend({ a: agentUrl }, { state: { redis: { url: redisUrl, key_prefix: prefix } }, clients: { team: { key: KEY, ...client } } });
}

/** The headers of the team's batches. */
const TEAM = { authorization: `Bearer ${KEY}` };

test('max_batches_in_flight 1 over two replicas: one batch at the backend at a time, the other waits for it', async () => {
  const agent = await f.agent({ behaviour: { delayMs: 400 } });
  const cfg = config(agent.url, { max_batches_in_flight: 1, max_wait_s: 30 });
  const [g1, g2] = [await f.gateway(cfg), await f.gateway(cfg)];
  const answers = await Promise.all([g1!.post({ request_id: 'inflight-1', inputs: [mkInput(1)] }, TEAM), g2!.post({ request_id: 'inflight-2', inputs: [mkInput(2)] }, TEAM)]);
  for (const a of answers) {
    assert.equal(a.status, 200);
    assert.equal((a.json as Cand[])[0]!.status, 'completed');
  }
  assert.equal(agent.maxInFlight, 1, 'never two of the client\'s batches at the backend at once');
  assert.equal(agent.requestsTo('/v1/responses').length, 2);
});

test('max_candidates_per_minute over two replicas: the bucket is shared, the second replica\'s batch is over it', async () => {
  const agent = await f.agent({});
  const cfg = config(agent.url, { max_candidates_per_minute: 10, max_wait_s: 0 });
  const [g1, g2] = [await f.gateway(cfg), await f.gateway(cfg)];
  const first = await g1!.post({ request_id: 'rate-1', inputs: [mkInput(1, { num_outputs: 8 })] }, TEAM);
  assert.ok((first.json as Cand[]).every((c) => c.status === 'completed'));
  // The other replica's own bucket is full, but the shared one holds 2 tokens.
  const second = await g2!.post({ request_id: 'rate-2', inputs: [mkInput(2, { num_outputs: 8 })] }, TEAM);
  assert.equal(second.status, 200);
  const cands = second.json as Cand[];
  assert.equal(cands.length, 8);
  assert.ok(cands.every((c) => c.status === 'error' && c.error?.code === 'gateway_overloaded'), JSON.stringify(cands[0]));
  assert.match(cands[0]!.error!.message, /clients\.team\.max_candidates_per_minute \(10\)/);
  assert.equal(agent.requestsTo('/v1/responses').length, 1);
  const small = await g2!.post({ request_id: 'rate-3', inputs: [mkInput(3, { num_outputs: 2 })] }, TEAM);
  assert.ok((small.json as Cand[]).every((c) => c.status === 'completed'));
});

test('Redis unavailable: each replica holds its own limits, and counts the batches it admitted alone', async () => {
  const agent = await f.agent({ behaviour: { delayMs: 200 } });
  // A port in this suite's range where nothing listens.
  const cfg = config(agent.url, { max_batches_in_flight: 1, max_candidates_per_minute: 100, max_wait_s: 30 }, 'redis://127.0.0.1:16441');
  const g = await f.gateway(cfg);
  const answers = await Promise.all([g.post({ request_id: 'down-1', inputs: [mkInput(1)] }, TEAM), g.post({ request_id: 'down-2', inputs: [mkInput(2)] }, TEAM)]);
  for (const a of answers) assert.equal((a.json as Cand[])[0]!.status, 'completed');
  assert.equal(agent.maxInFlight, 1, 'the local limit holds');
  const metrics = await (await fetch(`${g.url}/metrics`)).text();
  assert.match(metrics, /magma_gateway_client_limits_local_only_total\{client="team",limit="batches_in_flight"\} 2/);
  assert.match(metrics, /magma_gateway_client_limits_local_only_total\{client="team",limit="candidates_per_minute"\} 2/);
});
