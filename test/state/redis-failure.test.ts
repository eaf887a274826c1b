/**
 * The Redis store while its Redis fails: a private redis-server is killed (-9), restarted on the same port, or
 * stops answering (CLIENT PAUSE ALL). Every call must complete quickly on local state, `up` must follow, and
 * shared state must resume by itself.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, it } from 'node:test';
import { createStore, waitUntilUp, type Store } from '../../src/state/index.js';
import { waitFor } from '../helpers/wait.js';
import {
  freePort,
  killHard,
  recordingLog,
  redisCall,
  redisConfig,
  startRedisServer,
  uniquePrefix,
} from './helpers.js';

/** Runs `fn` and checks that it completed within `ms`. */
async function quick<T>(what: string, fn: () => Promise<T>, ms = 1000): Promise<T> {
  const t0 = Date.now();
  const result = await fn();
  const took = Date.now() - t0;
  assert.ok(took < ms, `${what} took ${took} ms`);
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
    const held = await store.acquire(key, 2, { timeoutMs: 0 });
    const full = await store.acquire(key, 2, { timeoutMs: 0 });
    assert.ok(held && full);
    const waiting = store.acquire(key, 2, { timeoutMs: 10_000 });
    await waitFor('the waiter queued in redis', async () => Number(await redisCall(url, 'ZCARD', `${prefix}sem:{${key}}:queue`)) === 1);

    await killHard(servers.pop()!);
    await waitFor('down within 0.5 s', () => !store.isUp(), { timeoutMs: 500 });

    // Limits: local, with the same limit, counting the Redis permits still held here.
    const other = await quick('acquire (free key)', () => store.acquire('backend-b', 1, { timeoutMs: 0 }));
    assert.ok(other);
    assert.equal(await quick('acquire (full key)', () => store.acquire(key, 2, { timeoutMs: 100 })), undefined);
    full.release();
    const fromQueue = await quick('queued waiter', () => waiting);
    assert.ok(fromQueue, 'the waiter queued in redis was served locally');

    // Replay: local within this process.
    const first = await quick('replayBegin', () => store.replayBegin('rid-1', 'h'));
    assert.equal(first.kind, 'compute');
    const second = store.replayBegin('rid-1', 'h');
    if (first.kind === 'compute') await quick('finish', () => first.lease.finish('body'));
    assert.deepEqual(await second, { kind: 'hit', body: 'body' });

    // Counters and shared values: kept here and sent once Redis is back.
    store.incr('exp', 'qwen', 5);
    await quick('flush', () => store.flush());
    assert.deepEqual(await quick('readCounters', () => store.readCounters('exp')), { qwen: 5 });
    await quick('setShared', () => store.setShared('eject:x', 'yes', 60_000));
    assert.equal(await quick('getShared', () => store.getShared('eject:x')), 'yes');
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
    await waitFor('counters sent', async () => (await replica.readCounters('exp')).qwen === 5, { timeoutMs: 2000 });
    assert.equal(await replica.getShared('eject:x'), 'yes');
    await waitFor('the two permits still held here (one from Redis, one granted locally) count in Redis again', async () => {
        const p = await replica.acquire(key, 2, { timeoutMs: 0 });
        p?.release();
        return p === undefined;
      }, { timeoutMs: 2000 });
    held.release();
    fromQueue.release();
    other.release();
    const p = await replica.acquire(key, 2, { timeoutMs: 1000 });
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
    const busy = await store.acquire('k', 1, { timeoutMs: 0 });
    assert.ok(busy);
    const warm = await store.replayBegin('warm', 'h'); // loads the replay scripts, so Redis runs them later
    if (warm.kind === 'compute') await warm.lease.abandon();

    // The server answers no command for 1.5 s (connections stay open, as with a server stalled on a slow
    // command); its OK to CLIENT PAUSE says the pause has begun.
    assert.equal(await redisCall(url, 'CLIENT', 'PAUSE', 1500, 'ALL'), 'OK');
    const answering = redisCall(url, 'PING'); // answered once the pause is over
    // A deadline shorter than the command timeout ends the call at the deadline.
    assert.equal(
      await quick('acquire with a 100 ms deadline', () => store.acquire('k', 1, { signal: AbortSignal.timeout(100), timeoutMs: 10_000 }), 300),
      undefined,
    );
    assert.equal(
      (await quick('replayBegin with a 100 ms deadline', () => store.replayBegin('r', 'h', AbortSignal.timeout(100)), 300)).kind,
      'aborted',
    );
    // Without a deadline, the command timeout marks Redis down and the call falls back.
    const p = await quick('acquire on a slow redis', () => store.acquire('free', 1, { timeoutMs: 5000 }));
    assert.ok(p);
    assert.equal(store.isUp(), false);
    await answering;
    await waitFor('up again once redis answers in time', () => store.isUp(), { timeoutMs: 2000 });
    // The replay entry Redis created for the abandoned begin was cleaned up on reconnect, not left to its lease.
    const again = await quick('replayBegin after recovery', () => store.replayBegin('r', 'h'), 300);
    assert.equal(again.kind, 'compute');
    if (again.kind === 'compute') await again.lease.abandon();
    p.release();
    busy.release();
  });
});
