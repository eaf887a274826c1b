/**
 * The Redis store while its Redis fails: a private redis-server is killed (-9), restarted on the same port, or
 * stops answering (CLIENT PAUSE ALL). Every call must complete quickly on local state, `up` must follow, and
 * shared state must resume by itself.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, it } from 'node:test';
import { createStore, type Store } from '../../src/state/index.js';
import { waitFor } from '../helpers/wait.js';
import {
  freePort,
  killHard,
  recordingLog,
  redisCall,
  redisConfig,
  replayed,
  startRedisServer,
  uniquePrefix,
  waitUntilUp,
} from './helpers.js';

/**
 * Runs `fn` while Redis is dead and checks that it completed on local state. Redis is not restarted until
 * later, so a call that waited on it would never complete: the bound only turns that hang into a failure that
 * names the call, and is generous so that a loaded machine passes it.
 */
async function local<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  const result = await fn();
  const took = Date.now() - t0;
  assert.ok(took < 5000, `${what} took ${took} ms: it waited on Redis`);
  return result;
}

describe('redis store when redis fails', { timeout: 30_000 }, () => {
  const servers: ChildProcess[] = [];
  const stores: Store[] = [];

  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    await Promise.all(servers.splice(0).map((s) => killHard(s)));
  });

  it('falls back at once when redis dies, and resumes sharing when it comes back', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    servers.push(await startRedisServer(port));
    const prefix = uniquePrefix();
    const log = recordingLog();
    const store = createStore(redisConfig(prefix, url), log);
    stores.push(store);
    assert.ok(await waitUntilUp(store, 3000));
    const ups: boolean[] = [];
    store.onUpChange((up) => ups.push(up));

    // Two Redis permits held across the outage, and a waiter queued in Redis when it dies.
    const key = 'backend-a';
    const held = await store.permits.acquire(key, 2, { timeoutMs: 0 });
    const full = await store.permits.acquire(key, 2, { timeoutMs: 0 });
    assert.ok(held && full);
    const waiting = store.permits.acquire(key, 2, { timeoutMs: 10_000 });
    await waitFor('the waiter queued in redis', async () => Number(await redisCall(url, 'ZCARD', `${prefix}sem:{${key}}:queue`)) === 1);

    await killHard(servers.pop()!);
    await waitFor('down within 0.5 s', () => !store.isUp(), { timeoutMs: 500 });

    // Limits: local, with the same limit, counting the Redis permits still held here.
    const other = await local('acquire (free key)', () => store.permits.acquire('backend-b', 1, { timeoutMs: 0 }));
    assert.ok(other);
    assert.equal(await local('acquire (full key)', () => store.permits.acquire(key, 2, { timeoutMs: 100 })), undefined);
    full.release();
    const fromQueue = await local('queued waiter', () => waiting);
    assert.ok(fromQueue, 'the waiter queued in redis was served locally');

    // Replay: local within this process.
    const first = await local('replay.begin', () => store.replay.begin('rid-1', 'h'));
    assert.equal(first.kind, 'compute');
    const second = store.replay.begin('rid-1', 'h');
    if (first.kind === 'compute') await local('finish', () => first.lease.finish('body'));
    assert.deepEqual(replayed(await second), { kind: 'hit', body: 'body' });

    // Counters and shared values: kept here and sent once Redis is back.
    store.counters.incr('exp', 'qwen', 5);
    await local('counters.flush', () => store.counters.flush());
    assert.deepEqual(await local('counters.read', () => store.counters.read('exp')), { qwen: 5 });
    await local('shared.set', () => store.shared.set('eject:x', 'yes', 60_000));
    assert.equal(await local('shared.get', () => store.shared.get('eject:x')), 'yes');
    assert.ok(store.stats().fallbacks > 0);
    assert.deepEqual(ups, [false]);

    servers.push(await startRedisServer(port));
    assert.ok(await waitUntilUp(store, 5000), 'reconnected by itself');
    assert.deepEqual(ups, [false, true]);
    assert.deepEqual(
      log.lines.map((l) => l.level),
      ['info', 'warn', 'info'],
      'up, down and up again, each logged once',
    );

    // Another replica now sees what this one did during the outage, and the permits it still holds.
    const replica = createStore(redisConfig(prefix, url), recordingLog());
    stores.push(replica);
    assert.ok(await waitUntilUp(replica, 3000));
    await waitFor('counters sent', async () => (await replica.counters.read('exp')).qwen === 5, { timeoutMs: 2000 });
    assert.equal(await replica.shared.get('eject:x'), 'yes');
    await waitFor('the two permits still held here (one from Redis, one granted locally) count in Redis again', async () => {
        const p = await replica.permits.acquire(key, 2, { timeoutMs: 0 });
        p?.release();
        return p === undefined;
      }, { timeoutMs: 2000 });
    held.release();
    fromQueue.release();
    other.release();
    const p = await replica.permits.acquire(key, 2, { timeoutMs: 1000 });
    assert.ok(p, 'released everywhere once Redis is back');
    p.release();
  });

  it('treats a slow redis as down, never waits on it past a deadline, and comes back by itself', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    servers.push(await startRedisServer(port));
    const store = createStore(redisConfig(uniquePrefix(), url, { lease_s: 5 }), recordingLog());
    stores.push(store);
    assert.ok(await waitUntilUp(store, 3000));
    const busy = await store.permits.acquire('k', 1, { timeoutMs: 0 });
    assert.ok(busy);
    const warm = await store.replay.begin('warm', 'h'); // loads the replay scripts, so Redis runs them later
    if (warm.kind === 'compute') await warm.lease.abandon();

    // The server answers no command for 1.5 s (connections stay open, as with a server stalled on a slow
    // command); its OK to CLIENT PAUSE says the pause has begun.
    assert.equal(await redisCall(url, 'CLIENT', 'PAUSE', 1500, 'ALL'), 'OK');
    const answering = redisCall(url, 'PING').then(() => 'redis answering' as const); // once the pause is over
    /** `call`'s result, which must come while Redis still answers nothing. */
    const whilePaused = async <T>(what: string, call: Promise<T>): Promise<T> => {
      const first = await Promise.race([call.then((value) => ({ value })), answering]);
      assert.notEqual(first, 'redis answering', `${what} waited for Redis to answer`);
      return (first as { value: T }).value; // not 'redis answering', checked above
    };
    // A deadline shorter than the command timeout ends the call at the deadline: before the command timeout
    // (500 ms) of the call's own command, still unanswered, marks Redis down.
    const limited = whilePaused('acquire with a 100 ms deadline', store.permits.acquire('k', 1, { signal: AbortSignal.timeout(100), timeoutMs: 10_000 }));
    assert.equal(await limited, undefined);
    assert.equal(store.isUp(), true, 'ended at its deadline, not at the command timeout');
    const replay = await whilePaused('replay.begin with a 100 ms deadline', store.replay.begin('r', 'h', AbortSignal.timeout(100)));
    assert.equal(replay.kind, 'aborted');
    assert.equal(store.isUp(), true, 'ended at its deadline, not at the command timeout');
    // Without a deadline, the command timeout marks Redis down and the call falls back.
    const p = await whilePaused('acquire on a slow redis', store.permits.acquire('free', 1, { timeoutMs: 5000 }));
    assert.ok(p);
    assert.equal(store.isUp(), false);
    await answering;
    await waitFor('up again once redis answers in time', () => store.isUp(), { timeoutMs: 2000 });
    // The replay entry Redis created for the abandoned begin was cleaned up on reconnect, not left to its
    // lease (5 s): the same request_id computes at once, waiting for no owner.
    const waitsBefore = store.stats().replayWaits;
    const again = await store.replay.begin('r', 'h');
    assert.equal(again.kind, 'compute');
    assert.equal(store.stats().replayWaits, waitsBefore, 'no wait for the abandoned entry');
    if (again.kind === 'compute') await again.lease.abandon();
    p.release();
    busy.release();
  });
});
