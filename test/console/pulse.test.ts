/**
 * The pulse (src/batch/pulse.ts, docs/console.md#the-pulse): samples are the metrics' increase over each interval,
 * as rates and interval quantiles; the ring keeps `pulse_points`; with Redis two replicas' samples are added up slot
 * by slot, so both answer the same history.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { GatewayMetrics } from '../../src/metrics.js';
import { Pulse, sharedPulse } from '../../src/batch/pulse.js';
import { createStore } from '../../src/state/index.js';
import { deleteKeys, recordingLog, redisConfig, uniquePrefix, waitUntilUp } from '../state/helpers.js';

const quiet = { warn: () => undefined };

function replica(points = 3, sink?: ReturnType<typeof sharedPulse>) {
  const metrics = new GatewayMetrics({});
  let batches = 0;
  let now = 1_000_000_000_000; // on a whole 10 s boundary
  const pulse = new Pulse({ metrics, batches: () => batches, settings: () => ({ intervalS: 10, points }), log: quiet, sink }, () => now);
  return {
    metrics,
    pulse,
    /** One interval: `n` batches, `errors` error candidates, each batch's overhead and each sub-request's latency. */
    async interval(n: number, errors: number, overheadS: number, latencyS: number) {
      batches += n;
      for (let i = 0; i < n; i++) {
        metrics.overhead.observe(overheadS);
        metrics.backendDuration.observe({ backend: 'a' }, latencyS);
        metrics.backendRequests.inc({ backend: 'a', outcome: i < errors ? 'gateway_backend_timeout' : 'ok' });
      }
      if (errors > 0) metrics.candidateErrors.inc({ agent: 'default', backend: 'a', code: 'gateway_backend_timeout' }, errors);
      now += 10_000;
      return pulse.sample();
    },
  };
}

test('a sample is the increase since the last one: rates per second and quantiles over the interval', async () => {
  const r = replica();
  assert.equal(await r.pulse.sample(), undefined, 'the first reading is the baseline');
  await r.interval(50, 5, 0.002, 0.2);
  await r.interval(20, 0, 0.02, 2);
  const v = await r.pulse.view();
  assert.equal(v.shared, false);
  assert.deepEqual(v.points.map((p) => p.batches_per_s), [5, 2]);
  assert.deepEqual(v.points.map((p) => p.error_candidates_per_s), [0.5, 0]);
  assert.deepEqual(v.points.map((p) => p.backends.a?.failures_per_s), [0.5, 0]);
  // The second interval's quantiles are its own (20 ms overhead, 2 s latency), not those since start.
  const [first, second] = v.points;
  assert.ok(first!.overhead_ms.p50! <= 2.5 && second!.overhead_ms.p50! > 10, JSON.stringify(v.points.map((p) => p.overhead_ms)));
  assert.ok(first!.backends.a!.latency_ms.p95! <= 250 && second!.backends.a!.latency_ms.p50! >= 1000);
  assert.equal(new Date(second!.at).getTime() - new Date(first!.at).getTime(), 10_000);
});

test('the ring keeps pulse_points samples, the oldest dropped', async () => {
  const r = replica(2);
  await r.pulse.sample();
  for (const n of [10, 20, 30]) await r.interval(n, 0, 0.001, 0.01);
  assert.deepEqual((await r.pulse.view()).points.map((p) => p.batches_per_s), [2, 3]);
});

const prefix = uniquePrefix();
after(() => deleteKeys(prefix));

test('with Redis, two replicas\' samples add up slot by slot and both show the same history', async () => {
  const stores = [createStore(redisConfig(prefix), recordingLog()), createStore(redisConfig(prefix), recordingLog())];
  try {
    for (const s of stores) assert.ok(await waitUntilUp(s, 5000), 'redis is up');
    const [x, y] = stores.map((s) => replica(5, sharedPulse(s)));
    await x!.pulse.sample();
    await y!.pulse.sample();
    await x!.interval(30, 3, 0.001, 0.05);
    await y!.interval(10, 1, 0.001, 0.05);
    const vx = await x!.pulse.view();
    const vy = await y!.pulse.view();
    assert.equal(vx.shared, true);
    assert.deepEqual(vx.points, vy.points);
    assert.equal(vx.points.length, 1);
    assert.equal(vx.points[0]!.batches_per_s, 4);
    assert.equal(vx.points[0]!.error_candidates_per_s, 0.4);
    assert.equal(vx.points[0]!.backends.a!.requests_per_s, 4);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
});
