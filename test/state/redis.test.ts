/**
 * The Redis store against the Redis at 127.0.0.1:6379 (CI starts one): the shared contract, then what only
 * sharing adds: several store instances (= gateway replicas) see one limit, one replay, one set of counters
 * and shared values, and a replica killed with -9 gives its permits and replay leases back within the lease.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StateConfig } from '../../src/state/types.js';
import { contractSuite } from './contract.js';
import { waitFor } from '../helpers/wait.js';
import { killHard, REDIS_URL, redisCall, replayed } from './helpers.js';
import { RedisDeployments, type Deployment } from './redis-harness.js';

const redis = new RedisDeployments(REDIS_URL);
const deployment = (over?: Partial<StateConfig>): Deployment => redis.deployment(over);

contractSuite('redis', redis.harness());

describe('redis store across replicas', { timeout: 30_000 }, () => {
  after(() => redis.cleanup());

  it('holds one limit across replicas, FIFO across them', async () => {
    const d = deployment();
    const replicas = await Promise.all([d.replica(), d.replica(), d.replica()]);
    const key = `b-${randomUUID()}`;
    const gauge = { now: 0, max: 0 };
    const got = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const permit = await replicas[i % 3]!.permits.acquire(key, 2, { timeoutMs: 10_000 });
        if (permit === undefined) return 0;
        gauge.max = Math.max(gauge.max, ++gauge.now);
        await sleep(3); // the holder's work: it keeps the permit a while, so that holders overlap
        gauge.now--;
        permit.release();
        return 1;
      }),
    );
    assert.equal(got.reduce((a: number, b) => a + b, 0), 30);
    assert.equal(gauge.max, 2);

    // FIFO across replicas: waiters queued alternately on two replicas are served in arrival order.
    const first = await replicas[0]!.permits.acquire(key, 1, { timeoutMs: 0 });
    assert.ok(first);
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      waiters.push(
        replicas[1 + (i % 2)]!.permits.acquire(key, 1, { timeoutMs: 10_000 }).then((p) => {
          order.push(i);
          p?.release();
        }),
      );
      // Arrival order across two connections is defined once each waiter is in the queue.
      await waitFor(`waiter ${i} queued`, async () => Number(await redisCall(REDIS_URL, 'ZCARD', `${d.prefix}sem:{${key}}:queue`)) === i + 1);
    }
    first.release();
    await Promise.all(waiters);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  });

  it('replays a batch computed on another replica, and waits for one in progress there', async () => {
    const d = deployment();
    const [a, b] = await Promise.all([d.replica(), d.replica()]);
    const rid = randomUUID();
    const first = await a.replay.begin(rid, 'h');
    assert.equal(first.kind, 'compute');
    const waiting = b.replay.begin(rid, 'h');
    await waitFor('b waiting for the batch in progress on a', () => b.stats().replayWaits === 1);
    const finished = Date.now();
    if (first.kind === 'compute') await first.lease.finish('{"ok":true}');
    assert.deepEqual(replayed(await waiting), { kind: 'hit', body: '{"ok":true}' });
    // The bound is the behaviour: the announcement wakes b within a few ms of the finish, where the safety-net
    // poll (every 200 ms, src/state/replay.ts) would come up to 200 ms later; 150 ms is as generous as it
    // can be while still telling the two apart.
    assert.ok(Date.now() - finished < 150, 'woken by pub/sub, not by the poll');
    assert.deepEqual(replayed(await b.replay.begin(rid, 'h')), { kind: 'hit', body: '{"ok":true}' });
    assert.deepEqual(await b.replay.begin(rid, 'other'), { kind: 'conflict' });
  });

  it('counters of two replicas add up to cluster totals', async () => {
    const d = deployment();
    const [a, b] = await Promise.all([d.replica(), d.replica()]);
    const key = `exp-${randomUUID()}`;
    for (let i = 0; i < 100; i++) {
      a.counters.incr(key, 'qwen');
      b.counters.incr(key, 'qwen');
    }
    b.counters.incr(key, 'gpt', 7);
    await Promise.all([a.counters.flush(), b.counters.flush()]);
    assert.deepEqual(await a.counters.read(key), { qwen: 200, gpt: 7 });
    assert.deepEqual(await b.counters.read(key), { qwen: 200, gpt: 7 });
    // Without an explicit flush, increments still reach the others within the flush period.
    a.counters.incr(key, 'gpt');
    await waitFor('the condition', async () => (await b.counters.read(key)).gpt === 8, { timeoutMs: 1000 });
  });

  it('shows shared values set on one replica to the others, at once through the announcement', async () => {
    const d = deployment();
    const [a, b] = await Promise.all([d.replica(), d.replica()]);
    const key = `eject:${randomUUID()}`;
    assert.equal(await b.shared.get(key), undefined); // cached as absent...
    const seen: (string | undefined)[] = [];
    b.shared.onChange((k, v) => k === key && seen.push(v));
    await a.shared.set(key, 'until-later', 10_000);
    await waitFor('announced to the other replica', () => seen.length === 1, { timeoutMs: 500 });
    assert.equal(await b.shared.get(key), 'until-later'); // ...and updated by the announcement
    await a.shared.delete(key);
    await waitFor('the condition', () => seen.length === 2, { timeoutMs: 500 });
    assert.deepEqual(seen, ['until-later', undefined]);
    assert.equal(await b.shared.get(key), undefined);
    const c = await d.replica(); // a replica started later reads the current state
    await a.shared.set(key, 'again', 10_000);
    assert.equal(await c.shared.get(key), 'again');
  });

  it('a replica killed with -9 gives back its permit and its replay computation within the lease', async () => {
    const d = deployment();
    const store = await d.replica();
    const key = `b-${randomUUID()}`;
    const rid = randomUUID();
    const holderPath = fileURLToPath(new URL('./fixtures/holder.js', import.meta.url));
    const child = fork(holderPath, [d.prefix, key, rid], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    try {
      // The child's report, or a failure if it exits or hangs first (never an endless wait).
      const ready = await Promise.race([
        once(child, 'message', { signal: AbortSignal.timeout(10_000) }).then(
          ([m]) => m as { permit: boolean; replay: string }, // the fixture sends this shape (fixtures/holder.ts)
          () => Promise.reject(new Error('holder did not report within 10 s')),
        ),
        once(child, 'exit').then(([code]) => Promise.reject(new Error(`holder exited with ${String(code)}`))),
      ]);
      assert.deepEqual(ready, { permit: true, replay: 'compute' });
      assert.equal(await store.permits.acquire(key, 1, { timeoutMs: 0 }), undefined, 'the child holds the only permit');
      const waiting = store.replay.begin(rid, 'h');
      await waitFor('the duplicate waiting for the child', () => store.stats().replayWaits === 1);
      await killHard(child);
      // The dead replica never releases: its permit comes back only when its lease (1 s) lapses, which must
      // happen within this acquire's own bound of three leases.
      const permit = await store.permits.acquire(key, 1, { timeoutMs: 3000 });
      assert.ok(permit, 'the dead replica’s permit came back within its lease');
      permit.release();
      const took = await waiting;
      assert.equal(took.kind, 'compute', 'a waiter took over the dead replica’s computation');
      if (took.kind === 'compute') await took.lease.finish('done');
    } finally {
      await killHard(child);
    }
  });

  it('renews leases while held: a permit held past its lease stays exclusive', async () => {
    const d = deployment();
    const [a, b] = await Promise.all([d.replica(), d.replica()]);
    const key = `b-${randomUUID()}`;
    const p = await a.permits.acquire(key, 1, { timeoutMs: 0 });
    assert.ok(p);
    assert.equal(await b.permits.acquire(key, 1, { timeoutMs: 1600 }), undefined, 'still held after 1.6 leases');
    p.release();
    assert.ok(await b.permits.acquire(key, 1, { timeoutMs: 500 }).then((q) => (q?.release(), q)));
    assert.equal(a.stats().leasesLost, 0);
  });

  it('close releases this replica’s permits at once', async () => {
    // A 60 s lease: a permit that came back by its lease lapsing would come long after the waiter gave up.
    const d = deployment({ lease_s: 60 });
    const [a, b] = await Promise.all([d.replica(), d.replica()]);
    const key = `b-${randomUUID()}`;
    assert.ok(await a.permits.acquire(key, 1, { timeoutMs: 0 }));
    const waiting = b.permits.acquire(key, 1, { timeoutMs: 5000 });
    await a.close();
    const p = await waiting;
    assert.ok(p, 'released by close, not by the lease');
    p.release();
  });
});
