/**
 * Ejection bookkeeping (docs/gateway-behaviour.md, "Probing and ejection") on Upstreams itself, with an injected
 * clock: N consecutive failures eject, the
 * backoff doubles from probe_interval_s up to eject_max_s, failures alone never eject more than
 * max_ejected_share of a backend, and a replica healthy for long enough forgets an ejection.
 * No traffic is sent: pools are created but never connect.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { parseConfigText } from '../../src/config/load.js';
import { GatewayMetrics } from '../../src/metrics.js';
import { Upstreams } from '../../src/upstream/upstreams.js';

function upstreams(replicas: number, over: Record<string, unknown> = {}): Upstreams {
  const urls = Array.from({ length: replicas }, (_, i) => `http://127.0.0.1:${9000 + i}`);
  const config = parseConfigText(
    stringify({
      probe_interval_s: 1,
      eject_max_s: 5,
      backends: { b: { urls, eject_after_failures: 3 } },
      routes: [{ name: 'default', backend: 'b' }],
      ...over,
    }),
    'test.yaml',
    {},
  );
  return new Upstreams(config, new GatewayMetrics({ defaultMetrics: false }));
}

test('three consecutive failures eject; a success in between resets the count', async () => {
  const u = upstreams(2);
  const [r] = u.backends.get('b')!.replicas;
  u.setState(r!, 'ready');
  u.recordFailure(r!, 'x', 0);
  u.recordFailure(r!, 'x', 0);
  u.recordSuccess(r!);
  u.recordFailure(r!, 'x', 0);
  u.recordFailure(r!, 'x', 0);
  assert.equal(r!.state, 'ready');
  u.recordFailure(r!, 'boom', 0);
  assert.equal(r!.state, 'ejected');
  assert.equal(r!.lastError, 'boom');
  assert.equal(r!.ejectedUntil, 1000, 'the first ejection lasts one probe interval');
  assert.deepEqual(u.routable('b').map((x) => x.index), [1], 'traffic moves to the other replica');
  await u.close();
});

test('the backoff doubles per ejection and is capped at eject_max_s', async () => {
  const u = upstreams(2);
  assert.deepEqual([1, 2, 3, 4, 5].map((n) => u.backoffMs(n)), [1000, 2000, 4000, 5000, 5000]);
  const r = u.backends.get('b')!.replicas[0]!;
  const durations: number[] = [];
  for (let k = 0; k < 4; k++) {
    u.setState(r, 'ready');
    for (let i = 0; i < 3; i++) u.recordFailure(r, 'x', 100);
    durations.push(r.ejectedUntil - 100);
  }
  assert.deepEqual(durations, [1000, 2000, 4000, 5000]);
  await u.close();
});

test('failures alone never eject more than max_ejected_share of the replicas', async () => {
  const u = upstreams(4, { max_ejected_share: 0.5 });
  const rs = u.backends.get('b')!.replicas;
  for (const r of rs) u.setState(r, 'ready');
  for (const r of rs) for (let i = 0; i < 5; i++) u.recordFailure(r, 'network down', 0);
  assert.equal(rs.filter((r) => r.state === 'ejected').length, 2);
  assert.equal(u.routable('b').length, 2, 'half of the backend keeps serving');
  await u.close();
});

test('a single-replica backend is never ejected by failures (it would empty the backend)', async () => {
  const u = upstreams(1);
  const r = u.backends.get('b')!.replicas[0]!;
  u.setState(r, 'ready');
  for (let i = 0; i < 10; i++) u.recordFailure(r, 'x', 0);
  assert.equal(r.state, 'ready');
  await u.close();
});

test('max_ejected_share 0 still lets one of several replicas go; an incompatible replica is never ejected', async () => {
  const u = upstreams(3, { max_ejected_share: 0 });
  const [a, b, c] = u.backends.get('b')!.replicas;
  u.setState(a!, 'ready');
  u.setState(b!, 'ready');
  u.setState(c!, 'incompatible');
  for (let i = 0; i < 3; i++) for (const r of [a!, b!, c!]) u.recordFailure(r, 'x', 0);
  assert.deepEqual([a!.state, b!.state, c!.state], ['ejected', 'ready', 'incompatible']);
  await u.close();
});

test('a replica ready for as long as its last backoff forgets one ejection', async () => {
  const u = upstreams(2);
  const r = u.backends.get('b')!.replicas[0]!;
  r.ejections = 3;
  r.ejectedUntil = 10_000; // back at t = 10 s; the third backoff is 4 s
  u.setState(r, 'ready');
  u.forgive(r, 13_999);
  assert.equal(r.ejections, 3);
  u.forgive(r, 14_000);
  assert.equal(r.ejections, 2);
  u.forgive(r, 15_000);
  assert.equal(r.ejections, 2, 'the next step needs another full (2 s) healthy period');
  u.forgive(r, 16_000);
  assert.equal(r.ejections, 1);
  await u.close();
});
