/**
 * The store contract, run against both the memory and the Redis store (memory.test.ts, redis.test.ts): the
 * same behaviour is promised whichever is configured.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashBody, type Permit, type Store } from '../../src/state/index.js';
import type { StateConfig } from '../../src/state/types.js';
import { waitFor } from '../helpers/wait.js';
import { replayed } from './helpers.js';

export interface Harness {
  /** A fresh store for one test, ready to use (Redis: connected). */
  make(over?: Partial<StateConfig>): Promise<Store>;
  /** Checks that the semaphore `key` holds nothing and queues nobody anymore (Redis: its keys are empty). */
  assertIdle(key: string): Promise<void>;
  /** Resolves once `n` waiters are queued on the semaphore `key` (Redis: in its queue key). */
  waitQueued(key: string, n: number): Promise<void>;
  /** Frees the resources of the stores made so far. */
  cleanup(): Promise<void>;
}

function uniqueKey(): string {
  return `backend-${randomUUID()}`;
}

/** Holds a permit for `ms`, tracking the number held at once in `gauge`. */
async function hold(permit: Permit, gauge: { now: number; max: number }, ms: number): Promise<void> {
  gauge.now++;
  gauge.max = Math.max(gauge.max, gauge.now);
  await sleep(ms); // the holder's work: it keeps the permit a while, so that holders overlap
  gauge.now--;
  permit.release();
}

/** Every port's contract, against one store: the same behaviour whichever store is configured. */
export function contractSuite(name: string, harness: Harness): void {
  describe(`${name} store contract`, { timeout: 30_000 }, () => {
    after(() => harness.cleanup());
    permitsContract(harness);
    permitWaitsContract(harness);
    replayContract(harness);
    replayWaitersContract(harness);
    countersContract(harness);
    sharedValuesContract(harness);
    claimsContract(harness);
    cappedListsContract(harness);
  });
}

/** Per-key concurrency limits (Permits): the limit holds, FIFO, no waiting with timeoutMs 0. */
function permitsContract(harness: Harness): void {
  describe('permits', () => {
    it('never exceeds the limit under 50 concurrent acquirers', async () => {
      const store = await harness.make();
      const key = uniqueKey();
      const gauge = { now: 0, max: 0 };
      const results = await Promise.all(
        Array.from({ length: 50 }, async () => {
          const permit = await store.permits.acquire(key, 2, { timeoutMs: 10_000 });
          if (permit === undefined) return false;
          await hold(permit, gauge, 3);
          return true;
        }),
      );
      assert.equal(results.filter(Boolean).length, 50);
      assert.equal(gauge.max, 2);
      await harness.assertIdle(key);
    });

    it('grants waiters in FIFO order', async () => {
      const store = await harness.make();
      const key = uniqueKey();
      const first = await store.permits.acquire(key, 1, { timeoutMs: 0 });
      assert.ok(first);
      const order: number[] = [];
      const waiters = Array.from({ length: 6 }, (_, i) =>
        store.permits.acquire(key, 1, { timeoutMs: 10_000 }).then(async (p) => {
          assert.ok(p);
          order.push(i);
          await sleep(2); // the holder's work: the next waiter must wait for this release, not be granted beside it
          p.release();
        }),
      );
      await harness.waitQueued(key, 6);
      first.release();
      await Promise.all(waiters);
      assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
      await harness.assertIdle(key);
    });

    it('grants a free permit with timeoutMs 0 and refuses a busy one at once', async () => {
      const store = await harness.make();
      const key = uniqueKey();
      const p = await store.permits.acquire(key, 1, { timeoutMs: 0 });
      assert.ok(p);
      assert.equal(await store.permits.acquire(key, 1, { timeoutMs: 0 }), undefined);
      assert.equal(store.stats().acquireTimeouts, 1, 'refused as a timeout, without queueing');
      p.release();
      await harness.assertIdle(key);
    });
  });
}

/** Permits: how a wait ends without a permit (timeout, abort) and leaks nothing. */
function permitWaitsContract(harness: Harness): void {
  describe('permit waits', () => {
    it('times out a waiter with undefined and counts it', async () => {
      const store = await harness.make();
      const key = uniqueKey();
      const p = await store.permits.acquire(key, 1, { timeoutMs: 0 });
      assert.ok(p);
      let settled = false;
      const waiting = store.permits.acquire(key, 1, { timeoutMs: 150 }).finally(() => (settled = true));
      await harness.waitQueued(key, 1);
      assert.equal(settled, false, 'the waiter queued rather than being refused at once');
      assert.equal(await waiting, undefined);
      assert.equal(store.stats().acquireTimeouts, 1);
      p.release();
      await harness.assertIdle(key);
    });

    it('an aborted waiter leaves with undefined and takes nothing; an aborted holder gives its permit back', async () => {
      const store = await harness.make();
      const key = uniqueKey();
      const p = await store.permits.acquire(key, 1, { timeoutMs: 0 });
      assert.ok(p);
      const ac = new AbortController();
      const waiting = store.permits.acquire(key, 1, { signal: ac.signal, timeoutMs: 10_000 });
      await harness.waitQueued(key, 1);
      ac.abort();
      assert.equal(await waiting, undefined); // long before its 10 s timeout: the test would time out
      assert.equal(store.stats().acquireAborts, 1);
      p.release();
      p.release(); // idempotent: must not free a second slot
      const again = new AbortController();
      const q = await store.permits.acquire(key, 1, { signal: again.signal, timeoutMs: 0 });
      assert.ok(q, 'the slot is free: the aborted waiter took nothing');
      assert.equal(await store.permits.acquire(key, 1, { timeoutMs: 0 }), undefined, 'double release freed nothing');
      again.abort(); // releases q by itself
      assert.ok(await store.permits.acquire(key, 1, { timeoutMs: 1000 }).then((r) => (r?.release(), r)));
      assert.equal(await store.permits.acquire(key, 1, { signal: AbortSignal.abort(), timeoutMs: 0 }), undefined);
      await harness.assertIdle(key);
    });
  });
}

/** Idempotent replay (ReplayStore): what is stored, for how long, and what is not. */
function replayContract(harness: Harness): void {
  describe('replay', () => {
    it('replay: compute, then hit with the stored body', async () => {
      const store = await harness.make();
      const rid = randomUUID();
      const h = hashBody('{"a":1}');
      const first = await store.replay.begin(rid, h);
      assert.equal(first.kind, 'compute');
      if (first.kind === 'compute') await first.lease.finish('[1]');
      assert.deepEqual(replayed(await store.replay.begin(rid, h)), { kind: 'hit', body: '[1]' });
      assert.equal(store.stats().replayHits, 1);
      assert.equal(store.stats().replayStored, 1);
    });

    it('replay: an answer in pieces comes back as the same bytes, multi-byte characters and all', async () => {
      const store = await harness.make();
      const rid = randomUUID();
      const parts = [Buffer.from('[{"s":"h\u00e9 \u{1f916}'), Buffer.from([0xe2, 0x82]), Buffer.from([0xac]), Buffer.from('","n":123456789012345678901234567890}]')];
      const bytes = Buffer.concat(parts);
      const first = await store.replay.begin(rid, 'h');
      assert.equal(first.kind, 'compute');
      // The euro sign is split across two pieces: only the joined bytes are a character.
      if (first.kind === 'compute') await first.lease.finish({ parts, length: bytes.length });
      const hit = await store.replay.begin(rid, 'h');
      assert.deepEqual(replayed(hit), { kind: 'hit', body: bytes.toString('utf8') });
    });

    it('replay: a stored response is gone after replay_ttl_s, and the batch is computed again', async () => {
      const store = await harness.make({ replay_ttl_s: 0.3 });
      const rid = randomUUID();
      const first = await store.replay.begin(rid, 'h');
      if (first.kind === 'compute') await first.lease.finish('[1]');
      assert.equal((await store.replay.begin(rid, 'h')).kind, 'hit');
      let again = await store.replay.begin(rid, 'h');
      await waitFor('the stored response to expire', async () => (again = await store.replay.begin(rid, 'h')).kind === 'compute', { timeoutMs: 3000 });
      if (again.kind === 'compute') await again.lease.finish('[2]');
      assert.deepEqual(replayed(await store.replay.begin(rid, 'h')), { kind: 'hit', body: '[2]' });
    });

    it('replay: a response over replay_max_bytes is not stored, and counted', async () => {
      const store = await harness.make({ replay_max_bytes: 10 });
      const rid = randomUUID();
      const first = await store.replay.begin(rid, 'h');
      if (first.kind === 'compute') await first.lease.finish('x'.repeat(11));
      assert.equal((await store.replay.begin(rid, 'h')).kind, 'compute');
      assert.equal(store.stats().replayTooLarge, 1);
    });
  });
}

/** ReplayStore: duplicates that arrive while the first is computing. */
function replayWaitersContract(harness: Harness): void {
  describe('replay waiters', () => {
    it('replay: a duplicate waits for the first and gets its result', async () => {
      const store = await harness.make();
      const rid = randomUUID();
      const first = await store.replay.begin(rid, 'h');
      assert.equal(first.kind, 'compute');
      const second = store.replay.begin(rid, 'h');
      await waitFor('the duplicate waiting', () => store.stats().replayWaits === 1);
      if (first.kind === 'compute') await first.lease.finish('answer');
      assert.deepEqual(replayed(await second), { kind: 'hit', body: 'answer' });
      assert.equal(store.stats().replayWaits, 1);
    });

    it('replay: same request_id with another body is a conflict, computed and counted', async () => {
      const store = await harness.make();
      const rid = randomUUID();
      const first = await store.replay.begin(rid, 'h1');
      assert.deepEqual(await store.replay.begin(rid, 'h2'), { kind: 'conflict' });
      if (first.kind === 'compute') await first.lease.finish('x');
      assert.deepEqual(await store.replay.begin(rid, 'h2'), { kind: 'conflict' });
      assert.equal(store.stats().replayConflicts, 2);
    });

    it('replay: an abandoned computation hands over to one waiter', async () => {
      const store = await harness.make();
      const rid = randomUUID();
      const first = await store.replay.begin(rid, 'h');
      const a = store.replay.begin(rid, 'h');
      const b = store.replay.begin(rid, 'h');
      await waitFor('both duplicates waiting', () => store.stats().replayWaits === 2);
      if (first.kind === 'compute') await first.lease.abandon();
      const next = await Promise.race([a, b]);
      assert.equal(next.kind, 'compute');
      if (next.kind === 'compute') await next.lease.finish('second try');
      const results = await Promise.all([a, b]);
      assert.deepEqual(
        results.map((r) => r.kind).sort(),
        ['compute', 'hit'],
        'exactly one waiter computed, the other replayed',
      );
    });

    it('replay: a waiter whose signal aborts leaves with "aborted"', async () => {
      const store = await harness.make();
      const rid = randomUUID();
      const first = await store.replay.begin(rid, 'h');
      const ac = new AbortController();
      const waiting = store.replay.begin(rid, 'h', ac.signal);
      await waitFor('the duplicate waiting', () => store.stats().replayWaits === 1);
      ac.abort();
      assert.deepEqual(await waiting, { kind: 'aborted' });
      if (first.kind === 'compute') await first.lease.abandon();
    });
  });
}

/** Cluster-wide counters (Counters). */
function countersContract(harness: Harness): void {
  describe('counters', () => {
    it('counters add up', async () => {
      const store = await harness.make();
      const key = `exp-${randomUUID()}`;
      store.counters.incr(key, 'qwen');
      store.counters.incr(key, 'qwen', 2);
      store.counters.incr(key, 'gpt', 0.5);
      assert.deepEqual(await store.counters.read(key), { qwen: 3, gpt: 0.5 });
      await store.counters.flush();
      assert.deepEqual(await store.counters.read(key), { qwen: 3, gpt: 0.5 });
      assert.deepEqual(await store.counters.read(`none-${randomUUID()}`), {});
    });
  });
}

/** Shared values (SharedValues): set, read, announced, expired. */
function sharedValuesContract(harness: Harness): void {
  describe('shared values', () => {
    it('shared values: set, get, announce, delete, expire', async () => {
      const store = await harness.make();
      const key = `eject:${randomUUID()}`;
      const seen: [string, string | undefined][] = [];
      const off = store.shared.onChange((k, v) => {
        if (k === key) seen.push([k, v]);
      });
      await store.shared.set(key, 'ejected', 10_000);
      assert.equal(await store.shared.get(key), 'ejected');
      await store.shared.delete(key);
      assert.equal(await store.shared.get(key), undefined);
      await store.shared.set(key, 'briefly', 60);
      await waitFor('the shared key to expire', async () => (await store.shared.get(key)) === undefined, { timeoutMs: 1500 });
      off();
      assert.deepEqual(seen, [
        [key, 'ejected'],
        [key, undefined],
        [key, 'briefly'],
      ]);
    });
  });
}

/** Set-once values and bounded sets (Claims): the first caller's value stays, sets keep at most their bound. */
function claimsContract(harness: Harness): void {
  describe('claims', () => {
    it('claims: the first value stays, every caller learns it; sets keep at most maxMembers', async () => {
      const store = await harness.make();
      const key = `x:${randomUUID()}`;
      assert.deepEqual(await store.claims.claim(key, 'a', 10_000), { first: true, value: 'a' });
      assert.deepEqual(await store.claims.claim(key, 'b', 10_000), { first: false, value: 'a' });
      assert.equal(await store.claims.read(key), 'a');
      assert.equal(await store.claims.read(`none-${randomUUID()}`), undefined);
      const set = `s:${randomUUID()}`;
      const kept: boolean[] = [];
      for (const m of ['1', '2', '2', '3', '1']) kept.push(await store.claims.addMember(set, m, 10_000, 2));
      // A member already in a full set is kept; one that does not fit is reported left out.
      assert.deepEqual(kept, [true, true, true, false, true]);
      assert.deepEqual((await store.claims.members(set)).sort(), ['1', '2']);
      assert.deepEqual(await store.claims.members(`none-${randomUUID()}`), []);
    });

    it('claims: a release takes a claim back only while it holds the value released', async () => {
      const store = await harness.make();
      const key = `x:${randomUUID()}`;
      await store.claims.claim(key, 'a', 10_000);
      await store.claims.release(key, 'b');
      assert.equal(await store.claims.read(key), 'a', 'another value leaves the claim');
      await store.claims.release(key, 'a');
      assert.equal(await store.claims.read(key), undefined);
      assert.deepEqual(await store.claims.claim(key, 'b', 10_000), { first: true, value: 'b' });
      await store.claims.release(`none-${randomUUID()}`, 'a');
    });

    it('claims: a claim is gone after its TTL, and the next caller is first again', async () => {
      const store = await harness.make();
      const key = `x:${randomUUID()}`;
      await store.claims.claim(key, 'a', 60);
      await waitFor('the claim to expire', async () => (await store.claims.read(key)) === undefined, { timeoutMs: 1500 });
      assert.deepEqual(await store.claims.claim(key, 'b', 10_000), { first: true, value: 'b' });
    });
  });
}

/** Lists that keep their last entries (CappedLists). */
function cappedListsContract(harness: Harness): void {
  describe('capped lists', () => {
    it('lists: keep the last max entries, oldest first', async () => {
      const store = await harness.make();
      const key = `l:${randomUUID()}`;
      for (const v of ['1', '2', '3', '4']) await store.lists.push(key, v, 3, 10_000);
      assert.deepEqual(await store.lists.read(key), ['2', '3', '4']);
      assert.deepEqual(await store.lists.read(`none-${randomUUID()}`), []);
    });
  });
}
