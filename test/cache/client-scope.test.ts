/**
 * The response cache keeps tenants apart (docs/cache.md#clients): with `clients:` configured an entry belongs
 * to the client whose batch caused it, so team-b misses (and the agent answers it) where team-a hits, and
 * `x-gateway-cache-hits` counts only the caller's own hits; `cache.shared_across_clients: true` shares them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheOwner } from '../../src/cache/cache-key.js';
import type { FakeAgent } from '../helpers/fake-agent.js';
import { useFixtures } from '../helpers/fixtures.js';
import type { Cand, TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { cachedConfig, freshRequestId, metricValue, seenInputs, slotInput } from './cache-helpers.js';

const KEYS = { 'team-a': 'team-a-key-0123456789abcdef', 'team-b': 'team-b-key-0123456789abcdef' };

test('cacheOwner: the client without sharing, everyone without clients or with sharing', () => {
  assert.equal(cacheOwner('team-a', false), 'client:team-a');
  assert.equal(cacheOwner('team-a', true), '*');
  assert.equal(cacheOwner(undefined, false), '*');
});

/** One deterministic input (the same bytes every time) posted as `team`: the hit header and the answer's trajectory. */
async function post(gw: TestGateway, team: keyof typeof KEYS): Promise<{ hits: string | null; trajectory: unknown }> {
  const res = await gw.post({ request_id: freshRequestId(), inputs: [slotInput(0, 0, undefined)] }, { authorization: `Bearer ${KEYS[team]}` });
  assert.equal(res.status, 200, res.text);
  const [cand] = res.json as Cand[];
  return { hits: res.headers.get('x-gateway-cache-hits'), trajectory: (cand!.memory._gateway as Record<string, unknown> | undefined)?.trajectory };
}

async function stored(gw: TestGateway, n: number): Promise<void> {
  await waitFor(`${n} cache entries stored`, async () => (await metricValue(gw, 'magma_gateway_cache_stores_total')) >= n);
}

async function gateway(t: Parameters<typeof useFixtures>[0], shared?: boolean): Promise<{ gw: TestGateway; a: FakeAgent }> {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const clients = Object.fromEntries(Object.entries(KEYS).map(([name, key]) => [name, { key }]));
  const cache = { max_mb: 64, ttl_s: 3600, ...(shared === undefined ? {} : { shared_across_clients: shared }) };
  const gw = await f.gateway(cachedConfig({ a }, { backend: 'a' }, { clients, cache }));
  return { gw, a };
}

test('two client keys, one deterministic input: team-b misses where team-a hits, and gets its own answer', async (t) => {
  const { gw, a } = await gateway(t);
  const first = await post(gw, 'team-a');
  assert.equal(first.hits, '0');
  await stored(gw, 1);
  const again = await post(gw, 'team-a');
  assert.equal(again.hits, '1', 'team-a hits its own entry');
  assert.equal(seenInputs(a).length, 1);

  const other = await post(gw, 'team-b');
  assert.equal(other.hits, '0', 'team-b learns nothing of team-a\'s input');
  assert.equal(seenInputs(a).length, 2, 'the agent answered team-b');
  if (first.trajectory !== undefined) assert.notEqual(other.trajectory, first.trajectory, 'not team-a\'s trajectory');
  await stored(gw, 2);
  assert.equal((await post(gw, 'team-b')).hits, '1', 'then team-b hits its own');
  assert.equal((await post(gw, 'team-a')).hits, '1');
  assert.equal(seenInputs(a).length, 2);
});

test('cache.shared_across_clients: true: team-b hits the entry team-a caused', async (t) => {
  const { gw, a } = await gateway(t, true);
  assert.equal((await post(gw, 'team-a')).hits, '0');
  await stored(gw, 1);
  assert.equal((await post(gw, 'team-b')).hits, '1');
  assert.equal(seenInputs(a).length, 1);
});
