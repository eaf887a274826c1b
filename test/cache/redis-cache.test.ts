/**
 * The response cache in Redis (docs/cache.md#redis): two gateway replicas with the same Redis and key_prefix
 * share entries and DELETEs; with its Redis killed a gateway answers every batch (misses, no HTTP error) and
 * caches again once Redis is back.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import { useFixtures } from '../helpers/fixtures.js';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { deleteKeys, killHard, sharedRedis, startRedisServer, uniquePrefix } from '../state/helpers.js';
import { cachedConfig, metricValue, postBatch, seenInputs, slotInput } from './cache-helpers.js';

/** In this engineer's port range (the brief's), so no other test's private Redis collides with it. */
const PRIVATE_REDIS_PORT = 16421;

test('two gateway replicas share the cache through Redis, and its DELETE', async (t) => {
  const f = useFixtures(t);
  const prefix = uniquePrefix();
  f.defer(() => deleteKeys(prefix));
  const a = await f.agent({ name: 'a' });
  const config = cachedConfig({ a }, { backend: 'a' }, { state: { redis: sharedRedis(prefix) } });
  const one = await f.gateway(config);
  const two = await f.gateway(config);
  const inputs = Array.from({ length: 6 }, (_, i) => slotInput(i, 0, undefined));

  const first = await postBatch(one, inputs);
  assert.equal(first.hits, '0');
  // Stored in the background: the other replica hits once the writes landed.
  await waitFor('the entries stored in redis', async () => (await metricValue(one, 'magma_gateway_cache_stores_total')) === 6);
  const second = await postBatch(two, inputs);
  assert.equal(second.hits, '6', 'the other replica answers from the shared cache');
  assert.equal(seenInputs(a).length, 6);
  assert.equal(second.text.split(second.requestId).join('R'), first.text.split(first.requestId).join('R'));

  const del = await http(`${two.adminUrl}/gateway/cache`, { method: 'DELETE' });
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(del.json, { emptied: ['*'], store: 'redis' });
  assert.equal((await postBatch(one, inputs)).hits, '0', "a DELETE on one replica empties every replica's cache");
  assert.equal(seenInputs(a).length, 12);
});

test('with its Redis killed, the gateway answers every batch from the backends (misses), and caches again once Redis is back', async (t) => {
  const f = useFixtures(t);
  const url = `redis://127.0.0.1:${PRIVATE_REDIS_PORT}`;
  let redis: ChildProcess | undefined = await startRedisServer(PRIVATE_REDIS_PORT);
  f.defer(() => (redis === undefined ? undefined : killHard(redis)));
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(cachedConfig({ a }, { backend: 'a' }, { state: { redis: { url, key_prefix: uniquePrefix() } } }));
  const inputs = Array.from({ length: 4 }, (_, i) => slotInput(i, 0, undefined));
  // Connected first: a store tried while the gateway's client is still connecting is a counted failure, not a
  // store, and under a loaded CI the first batch could come before the connection.
  await waitFor('the store is up', async () => (await metricValue(gw, 'magma_gateway_store_up')) === 1, { timeoutMs: 10_000 });
  await postBatch(gw, inputs);
  await waitFor('stored', async () => (await metricValue(gw, 'magma_gateway_cache_stores_total')) === 4);
  assert.equal((await postBatch(gw, inputs)).hits, '4');

  await killHard(redis);
  redis = undefined;
  for (let i = 0; i < 3; i++) {
    const res = await postBatch(gw, inputs);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.hits, '0', 'Redis down: a miss, never an error');
    assert.ok((res.json as { status: string }[]).every((c) => c.status === 'completed'));
  }
  assert.equal(seenInputs(a).length, 4 + 3 * 4);
  assert.ok((await metricValue(gw, 'magma_gateway_cache_store_failures_total', { reason: 'unavailable' })) > 0);
  const del = await http(`${gw.adminUrl}/gateway/cache`, { method: 'DELETE' });
  assert.equal(del.status, 503);
  assert.equal((del.json as { code: string }).code, 'GATEWAY_ERR_CACHE_UNAVAILABLE');

  redis = await startRedisServer(PRIVATE_REDIS_PORT);
  await waitFor('the store is up again', async () => (await metricValue(gw, 'magma_gateway_store_up')) === 1, { timeoutMs: 10_000 });
  await postBatch(gw, inputs);
  await waitFor('stored again', async () => (await metricValue(gw, 'magma_gateway_cache_stores_total')) === 8);
  assert.equal((await postBatch(gw, inputs)).hits, '4');
});
