/**
 * The memory cache's bounds (docs/cache.md#bounds): bytes under cache.max_mb by evicting the least recently
 * used entry, TTL on an injected clock, generations; and the key: every part of an input that decides its
 * answer changes it, the request_id, the input id and the gateway's memory tag do not; the config's defaults.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalCache } from '../../src/state/cache-entries.js';
import { cacheKey, type KeyTarget } from '../../src/cache/cache-key.js';
import { decodeEntry, encodeEntry } from '../../src/cache/cache-entry.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import type { InputSlices } from '../../src/protocol/request/raw-json.js';
import { parseConfigText } from '../../src/config/load.js';
import { configWarnings, formatWarning } from '../../src/config/warnings.js';

const KB = Buffer.alloc(1000, 0x61);
/** Value plus key plus the per-entry overhead local-cache.ts counts (256). */
const ENTRY = KB.length + 1 + 256;

test('max_mb evicts the least recently used entry first', async () => {
  const cache = new LocalCache({ capBytes: 3 * ENTRY });
  for (const k of ['a', 'b', 'c']) assert.equal(await cache.set(k, KB, 60_000), true);
  await cache.get(['a']); // a is now the most recently used: b is the oldest
  await cache.set('d', KB, 60_000);
  const [a, b, c, d] = await cache.get(['a', 'b', 'c', 'd']);
  assert.deepEqual([a !== undefined, b !== undefined, c !== undefined, d !== undefined], [true, false, true, true]);
  assert.deepEqual(cache.held(), { bytes: 3 * ENTRY, entries: 3, evicted: 1 });
  assert.equal(await cache.set('huge', Buffer.alloc(4 * ENTRY), 60_000), false, 'an entry larger than the whole cache is refused');
  assert.equal(cache.held().entries, 3, 'and evicts nothing');
});

test('an entry expires after its TTL, and a DELETE generation makes every older entry unreachable', async () => {
  let now = 1_000;
  const cache = new LocalCache({ capBytes: 1 << 20 }, () => now);
  await cache.set('k', KB, 500);
  now += 499;
  assert.ok((await cache.get(['k']))[0]);
  now += 1;
  assert.equal((await cache.get(['k']))[0], undefined);
  assert.equal(cache.held().bytes, 0, 'an expired entry gives its bytes back');

  assert.deepEqual(await cache.generations(['*', 'backend:a']), ['0', '0']);
  await cache.set('x', KB, 60_000);
  await cache.bump('backend:a');
  assert.deepEqual(await cache.generations(['*', 'backend:a']), ['0', '1']);
  await cache.bump('*');
  assert.deepEqual(cache.held(), { bytes: 0, entries: 0, evicted: 0 }, 'emptying everything frees the memory at once');
});

function inputOf(body: object): InputSlices {
  const r = readAgentRequest(Buffer.from(JSON.stringify(body)), { maxOutputsPerInput: 16, maxJsonDepth: 64, memoryKey: '_gateway' });
  if (!r.ok) throw new Error('invalid request');
  return r.request.inputs[0]!.raw;
}

const BASE = {
  id: 1,
  instruction: { type: 'env', content: 'step 2' },
  tools: [{ name: 'pick' }],
  attributes: { scenario: 'k' },
  memory: { history: [1, 2], _gateway: { backend: 'a', route: 'r' } },
  num_outputs: 1,
  extra_keys: { inference_mode: true },
};
const T: KeyTarget = { owner: '*', agent: 'default', route: 'r', target: 'backend:a@["id","1"]', generations: ['0', '0', '0'] };
const key = (over: object, target: KeyTarget = T, rid = 'r1'): string =>
  cacheKey(target, inputOf({ request_id: rid, inputs: [{ ...BASE, ...over }] }), (over as { num_outputs?: number }).num_outputs ?? 1);

test('the key holds every part of an input that decides its answer, and not the request_id, id or memory tag', () => {
  const k = key({});
  assert.equal(key({}, T, 'another-request'), k, 'not the request_id');
  assert.equal(key({ id: 99 }), k, 'not the input id');
  assert.equal(key({ memory: { history: [1, 2], _gateway: { backend: 'b', route: 'x', arm: 'b' } } }), k, 'not the gateway tag');
  assert.equal(key({ memory: { _gateway: { backend: 'b', route: 'x' }, history: [1, 2] } }), key({ memory: { history: [1, 2] } }));
  const changed: [string, string][] = [
    ['instruction', key({ instruction: { type: 'env', content: 'step 3' } })],
    ['tools', key({ tools: [{ name: 'place' }] })],
    ['attributes', key({ attributes: { scenario: 'j' } })],
    ['memory', key({ memory: { history: [1, 2, 3] } })],
    ['num_outputs', key({ num_outputs: 2 })],
    ['extra_keys', key({ extra_keys: { inference_mode: true, coaching: { kind: 'x' } } })],
    ['agent', key({}, { ...T, agent: 'kitchen' })],
    ['route', key({}, { ...T, route: 'other' })],
    ['agent_version', key({}, { ...T, target: 'backend:a@["id","2"]' })],
    ['generation', key({}, { ...T, generations: ['0', '0', '1'] })],
    ['owner', key({}, { ...T, owner: 'client:team-a' })],
  ];
  for (const [what, other] of changed) assert.notEqual(other, k, `${what} changes the key`);
  assert.equal(new Set(changed.map(([, v]) => v)).size, changed.length);
});

test('a stored entry decodes only as exactly what was stored, and holds no tag', () => {
  const tail = Buffer.from(',"status":"completed","memory":{},"internal_steps":[],"output":null,"error":null}');
  const tails = [{ tail, at: tail.indexOf('{}') + 1 }];
  const by = { t: 'a'.repeat(32), k: 2, x: '0123456789abcdef' };
  const buf = encodeEntry({ backend: 'a', arm: 'a', by, tails });
  assert.deepEqual(decodeEntry(buf, 1), { backend: 'a', arm: 'a', by, tails });
  assert.equal(buf.includes('"route"'), false, 'no tag member is stored');
  assert.equal(decodeEntry(buf, 2), undefined, 'another num_outputs');
  assert.equal(decodeEntry(buf.subarray(0, buf.length - 1), 1), undefined, 'truncated');
  assert.equal(decodeEntry(Buffer.from('garbage'), 1), undefined);
  assert.equal(decodeEntry(encodeEntry({ backend: 'a', tails: [{ tail, at: tail.length + 5 }] }), 1), undefined, 'the tag offset outside the tail');
  const v1 = Buffer.concat([Buffer.from(`${JSON.stringify({ v: 1, tag: { backend: 'a', route: 'r' }, n: [tail.length] })}\n`), tail]);
  assert.equal(decodeEntry(v1, 1), undefined, 'an entry of the first layout (with the first run\'s tag) is a miss');
  const errorTail = Buffer.from(',"status":"error","memory":{},"internal_steps":[],"output":null,"error":{}}');
  assert.equal(decodeEntry(encodeEntry({ backend: 'a', tails: [{ tail: errorTail, at: errorTail.indexOf('{}') + 1 }] }), 1), undefined, 'never an error candidate');
});

test('a route asking for the cache without the top-level `cache` is warned about', () => {
  const config = parseConfigText(
    ['backends: { a: { url: "http://127.0.0.1:1" } }', 'routes:', '  - { name: d, backend: a, cache: deterministic }'].join('\n'),
    't.yaml',
    {},
  );
  assert.deepEqual(configWarnings(config).map(formatWarning), [
    'routes[0].cache: route "d" sets cache: deterministic, but the config has no top-level "cache": nothing is cached (docs/cache.md)',
  ]);
  const on = parseConfigText(['cache: {}', 'backends: { a: { url: "http://127.0.0.1:1" } }', 'routes:', '  - { name: d, backend: a, cache: always }'].join('\n'), 't.yaml', {});
  assert.deepEqual(configWarnings(on), []);
  assert.deepEqual(on.cache, { max_mb: 256, ttl_s: 604800, max_entry_mb: 16, shared_across_clients: false }, 'the documented defaults');
  assert.equal(on.routes[0]!.cache, 'always');
  assert.equal(parseConfigText(['backends: { a: { url: "http://127.0.0.1:1" } }', 'routes: [{ name: d, backend: a }]'].join('\n'), 't.yaml', {}).routes[0]!.cache, 'off');
});
