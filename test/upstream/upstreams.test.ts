/**
 * Replica state as Upstreams alone writes it, on an injected clock (no HTTP: pools are created but never
 * connect): N consecutive failures eject with a backoff doubling from probe_interval_s up to eject_max_s, never
 * more than max_ejected_share of a backend by failures; a good probe ends an ejection only after its backoff; a
 * replica healthy for as long as its last backoff forgets one ejection; a refused connection takes a replica out
 * at once, whatever the share; remote ejections and reload carry-over; in-flight accounting drives sharding.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { parseConfigText } from '../../src/config/load.js';
import { GatewayMetrics } from '../../src/metrics.js';
import { backendInfoSchema } from '../../src/protocol/schemas.js';
import type { AgentInfo } from '../../src/protocol/types.js';
import type { Replica } from '../../src/upstream/replica.js';
import { Upstreams, type ProbeOutcome } from '../../src/upstream/upstreams.js';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';
import { oneBackend } from '../helpers/fixtures.js';

const info: AgentInfo = backendInfoSchema.parse(inferenceOnlyInfo('fake', '0.0.0-test'));
const OK: ProbeOutcome = { kind: 'ok', info };
const DOWN: ProbeOutcome = { kind: 'failed', reason: '/health answered 503' };

interface Fixture {
  u: Upstreams;
  rs: readonly Replica[];
  metrics: GatewayMetrics;
  clock: { t: number };
}

function fixture(replicas: number, over: Record<string, unknown> = {}): Fixture {
  const urls = Array.from({ length: replicas }, (_, i) => `http://127.0.0.1:${9000 + i}`);
  const config = parseConfigText(
    stringify(oneBackend({ b: { urls, eject_after_failures: 3 } }, { probe_interval_s: 1, eject_max_s: 5, ...over })),
    'test.yaml',
    {},
  );
  const clock = { t: 0 };
  const metrics = new GatewayMetrics({ defaultMetrics: false });
  const u = new Upstreams(config, metrics, () => clock.t);
  return { u, rs: u.backends.get('b')!.replicas, metrics, clock };
}

async function up(metrics: GatewayMetrics, replica: string): Promise<number | undefined> {
  const m = await metrics.backendUp.get();
  return m.values.find((v) => v.labels.replica === replica)?.value;
}

test('three consecutive failures eject; a success in between resets the count', async () => {
  const { u, rs } = fixture(2);
  const r = rs[0]!;
  u.recordProbe(r, OK);
  u.recordFailure(r, 'x');
  u.recordFailure(r, 'x');
  u.recordSuccess(r, 10);
  u.recordFailure(r, 'x');
  u.recordFailure(r, 'x');
  assert.equal(r.state, 'ready');
  u.recordFailure(r, 'boom');
  assert.equal(r.state, 'ejected');
  assert.equal(r.lastError, 'boom');
  assert.equal(r.ejectedUntil, 1000, 'the first ejection lasts one probe interval');
  assert.deepEqual(u.routable('b').map((x) => x.index), [1], 'traffic moves to the other replica');
  await u.close();
});

test('the backoff doubles per ejection and is capped at eject_max_s', async () => {
  const { u, rs, clock } = fixture(2);
  assert.deepEqual([1, 2, 3, 4, 5].map((n) => u.backoffMs(n)), [1000, 2000, 4000, 5000, 5000]);
  const r = rs[0]!;
  const durations: number[] = [];
  for (let k = 0; k < 4; k++) {
    clock.t = r.ejectedUntil; // each ejection ends and the replica probes ready again
    u.recordProbe(r, OK);
    assert.equal(r.state, 'ready');
    for (let i = 0; i < 3; i++) u.recordFailure(r, 'x');
    durations.push(r.ejectedUntil - clock.t);
  }
  assert.deepEqual(durations, [1000, 2000, 4000, 5000]);
  await u.close();
});

test('a good probe ends an ejection only once its backoff is over', async () => {
  const { u, rs, clock, metrics } = fixture(2);
  const r = rs[0]!;
  u.recordProbe(r, OK);
  clock.t = 100;
  for (let i = 0; i < 3; i++) u.recordFailure(r, 'x');
  assert.equal(await up(metrics, r.id), 0);
  clock.t = 1099;
  assert.deepEqual(u.recordProbe(r, OK), { from: 'ejected', to: 'ejected' });
  clock.t = 1100;
  assert.deepEqual(u.recordProbe(r, OK), { from: 'ejected', to: 'ready' });
  assert.equal(r.healthySince, 1100, 'the healthy period starts when it comes back');
  assert.equal(r.consecutiveFailures, 0);
  assert.equal(await up(metrics, r.id), 1);
  await u.close();
});

test('failures alone never eject more than max_ejected_share of the replicas', async () => {
  const { u, rs } = fixture(4, { max_ejected_share: 0.5 });
  for (const r of rs) u.recordProbe(r, OK);
  for (const r of rs) for (let i = 0; i < 5; i++) u.recordFailure(r, 'network down');
  assert.equal(rs.filter((r) => r.state === 'ejected').length, 2);
  assert.equal(u.routable('b').length, 2, 'half of the backend keeps serving');
  await u.close();
});

test('a single-replica backend is never ejected by failures; failed probes make it not_ready', async () => {
  const { u, rs } = fixture(1);
  const r = rs[0]!;
  u.recordProbe(r, OK);
  for (let i = 0; i < 10; i++) u.recordFailure(r, 'x');
  assert.equal(r.state, 'ready');
  assert.deepEqual(u.recordProbe(r, DOWN), { from: 'ready', to: 'not_ready' });
  assert.equal(u.canServe('b'), false);
  await u.close();
});

test('max_ejected_share 0 still lets one of several replicas go; an incompatible replica is never ejected', async () => {
  const { u, rs } = fixture(3, { max_ejected_share: 0 });
  const [a, b, c] = rs;
  u.recordProbe(a!, OK);
  u.recordProbe(b!, OK);
  u.recordProbe(c!, { kind: 'incompatible', info, reason: 'incompatible' });
  for (let i = 0; i < 3; i++) for (const r of [a!, b!, c!]) u.recordFailure(r, 'x');
  assert.deepEqual([a!.state, b!.state, c!.state], ['ejected', 'ready', 'incompatible']);
  await u.close();
});

test('a replica ready for as long as its last backoff forgets one ejection; a lapse restarts the period', async () => {
  const { u, rs, clock } = fixture(2, { eject_max_s: 60 });
  const r = rs[0]!;
  // Three ejections in a row: the third lasts 4 s.
  for (let k = 0; k < 3; k++) {
    clock.t = r.ejectedUntil;
    u.recordProbe(r, OK);
    for (let i = 0; i < 3; i++) u.recordFailure(r, 'x');
  }
  assert.equal(r.ejections, 3);
  clock.t = r.ejectedUntil;
  const back = clock.t;
  u.recordProbe(r, OK);
  assert.equal(r.state, 'ready');
  clock.t = back + 3999;
  u.recordProbe(r, OK);
  assert.equal(r.ejections, 3);
  clock.t = back + 4000;
  u.recordProbe(r, OK);
  assert.equal(r.ejections, 2);
  clock.t = back + 5000;
  u.recordProbe(r, OK);
  assert.equal(r.ejections, 2, 'the next step needs another full (2 s) healthy period');
  // A failed probe interrupts the healthy period: it counts again from the next good probe.
  clock.t = back + 5500;
  u.recordProbe(r, DOWN);
  clock.t = back + 6000;
  u.recordProbe(r, OK);
  assert.equal(r.healthySince, back + 6000);
  clock.t = back + 7999;
  u.recordProbe(r, OK);
  assert.equal(r.ejections, 2);
  clock.t = back + 8000;
  u.recordProbe(r, OK);
  assert.equal(r.ejections, 1);
  await u.close();
});

test('a refused connection takes replicas out of rotation at once, beyond max_ejected_share, until a good probe', async () => {
  const { u, rs, metrics } = fixture(2, { max_ejected_share: 0 });
  for (const r of rs) u.recordProbe(r, OK);
  u.recordConnectFailure(rs[0]!, 'cannot connect: ECONNREFUSED');
  assert.deepEqual(u.routable('b'), [rs[1]]);
  u.recordConnectFailure(rs[1]!, 'cannot connect: ECONNREFUSED');
  assert.deepEqual(rs.map((r) => r.state), ['not_ready', 'not_ready']);
  assert.equal(u.canServe('b'), false, 'a backend whose every replica refuses is not attempted');
  assert.equal(rs[1]!.lastError, 'cannot connect: ECONNREFUSED');
  assert.equal(await up(metrics, rs[1]!.id), 0);
  assert.deepEqual(u.recordProbe(rs[1]!, OK), { from: 'not_ready', to: 'ready' });
  assert.deepEqual(u.routable('b'), [rs[1]]);
  // Refusals count towards ejection too: the third in a row ejects (one replica may go even at share 0).
  u.recordConnectFailure(rs[0]!, 'x');
  u.recordConnectFailure(rs[0]!, 'x');
  assert.equal(rs[0]!.state, 'ejected');
  await u.close();
});

test('a replica never probed is routed to optimistically, and not after it refused a connection', async () => {
  const { u, rs } = fixture(2);
  assert.deepEqual(u.routable('b'), rs);
  u.recordConnectFailure(rs[0]!, 'cannot connect: ECONNREFUSED');
  assert.deepEqual(u.routable('b'), [rs[1]]);
  assert.deepEqual(u.routable('b', new Set([rs[1]!])), [], 'excluding the replicas already tried');
  await u.close();
});

test('a remote ejection is followed within the share, and ends like a local one', async () => {
  const { u, rs, clock } = fixture(2);
  for (const r of rs) u.recordProbe(r, OK);
  clock.t = 1000;
  assert.equal(u.applyRemoteEjection(rs[0]!, 500), false, 'already over');
  assert.equal(u.applyRemoteEjection(rs[0]!, 3000), true);
  assert.equal(rs[0]!.state, 'ejected');
  assert.equal(rs[0]!.ejectedUntil, 3000);
  assert.equal(u.applyRemoteEjection(rs[1]!, 3000), false, 'the share allows one of two');
  clock.t = 2999;
  u.recordProbe(rs[0]!, OK);
  assert.equal(rs[0]!.state, 'ejected');
  clock.t = 3000;
  u.recordProbe(rs[0]!, OK);
  assert.equal(rs[0]!.state, 'ready');
  await u.close();
});

test('a reload carries state and history over to the same url, not in-flight counts', async () => {
  const old = fixture(2);
  const r = old.rs[0]!;
  old.u.recordProbe(r, OK);
  old.u.recordProbe(old.rs[1]!, OK);
  old.clock.t = 50;
  for (let i = 0; i < 3; i++) old.u.recordFailure(r, 'flaky');
  old.u.attemptStarted(old.rs[1]!, 4);
  const next = fixture(2);
  next.u.inherit(old.u);
  const [n0, n1] = next.rs;
  assert.deepEqual(
    [n0!.state, n0!.ejections, n0!.ejectedUntil, n0!.lastError, n0!.consecutiveFailures, n0!.info],
    ['ejected', 1, 1050, 'flaky', 3, info],
  );
  assert.equal(n1!.state, 'ready');
  assert.equal(n1!.inFlightInputs, 0);
  assert.equal(await up(next.metrics, n1!.id), 1);
  await Promise.all([old.u.close(), next.u.close()]);
});

test('inputs in flight steer sharding to the less loaded replica', async () => {
  const { u, rs } = fixture(2);
  for (const r of rs) u.recordProbe(r, OK);
  u.attemptStarted(rs[0]!, 6);
  assert.deepEqual([rs[0]!.inFlightInputs, rs[0]!.inFlightRequests], [6, 1]);
  assert.deepEqual(u.shard('b', 8).map((s) => [s.replica.index, s.count]), [[0, 1], [1, 7]]);
  u.attemptEnded(rs[0]!, 6);
  assert.deepEqual(u.shard('b', 8).map((s) => [s.replica.index, s.count]), [[0, 4], [1, 4]]);
  await u.close();
});
