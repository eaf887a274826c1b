/**
 * The pure rules of replays, resumed episodes and signed tags (docs/experiments.md#replays-and-resumed-episodes,
 * #signed-tags), without HTTP: which unit a cached step belongs to, how an ended replay resolves, and which tags
 * are trusted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countersPossible, MAX_LINES_PER_STEP, signedText, tagRejection, tagValue, type MemoryTag, type TrajectoryState } from '../../src/protocol/memory-tag.js';
import { endOfReplay, lastStepOf, replayStep } from '../../src/experiments/replay.js';
import { hmacSigner, loadTagSecret, TAG_SECRET_ENV, tagSecretSource } from '../../src/experiments/tag-signer.js';
import { stepFeedback } from '../../src/experiments/trajectory.js';
import type { StoreStats } from '../../src/state/types.js';

const X = '0123456789abcdef';
const O = 'a'.repeat(32);
const T = 'b'.repeat(32);
const state = (over: Partial<TrajectoryState> = {}): TrajectoryState => ({ id: T, experiment: X, step: 2, s: 1, n: 1, stages: 0, hash: 'c'.repeat(64), flags: '', ...over });
const hit = (t: string, k: number, x = X): { backend: string; by: { t: string; k: number; x: string } } => ({ backend: 'x', by: { t, k, x } });

test('a new trajectory answered from the cache replays the producer of its first step; a live one is counted', () => {
  assert.deepEqual(replayStep(undefined, X, hit(O, 1)), { kind: 'replay', of: O });
  assert.deepEqual(replayStep(undefined, X, undefined), { kind: 'live' });
  assert.deepEqual(replayStep(undefined, X, hit(O, 2)), { kind: 'live' }, 'another step of the producer: not a replay of it');
  assert.deepEqual(replayStep(undefined, X, hit(O, 1, 'ffff')), { kind: 'live' }, 'another experiment\'s answer: a reset starts clean');
  assert.deepEqual(replayStep(undefined, X, { backend: 'x' }), { kind: 'live' }, 'an entry that names no producer');
});

test('a replay goes on while the same trajectory\'s next step answers it, and ends at the first other answer', () => {
  const replaying = state({ replay: O });
  assert.deepEqual(replayStep(replaying, X, hit(O, 3)), { kind: 'replay', of: O });
  assert.deepEqual(replayStep(replaying, X, undefined), { kind: 'ended', of: O, replayed: 2 });
  assert.deepEqual(replayStep(replaying, X, hit('d'.repeat(32), 3)), { kind: 'ended', of: O, replayed: 2, next: 'd'.repeat(32) });
  // A trajectory whose earlier steps were live counts its cached steps: coinciding inputs keep their own units.
  assert.deepEqual(replayStep(state(), X, hit(O, 3)), { kind: 'live' });
});

test('an ended replay supersedes an original that stopped there, and is a new unit after a finished prefix', () => {
  assert.equal(endOfReplay({ replayed: 2 }, undefined, 2), 'supersede', 'crashed after step 2, resumed');
  assert.equal(endOfReplay({ replayed: 2 }, undefined, 5), 'diverge', 'the original went on to step 5');
  assert.equal(endOfReplay({ replayed: 2, next: T }, T, 4), 'continue', 'the hit came from the trajectory that took the original over');
  assert.equal(endOfReplay({ replayed: 2 }, T, 2), 'diverge', 'another resumed copy already took it over');
  assert.equal(lastStepOf(['1|0|0|0|', '3|1|2|0|e', '2|1|1|0|', 'junk']), 3);
  assert.equal(lastStepOf([]), 0);
});

test('tags are trusted only when signed by the gateway and their counters are possible', () => {
  const signer = hmacSigner('a secret of sixteen+ chars');
  const t = state({ signer });
  const tag: MemoryTag = { backend: 'x', route: 'ab', arm: 'x', trajectory: t };
  const written = tagValue(tag);
  assert.match(String(written.sig), /^[A-Za-z0-9_-]{22}$/);
  const { signer: _s, ...plain } = t;
  const read: MemoryTag = { backend: 'x', route: 'ab', arm: 'x', trajectory: plain, sig: String(written.sig) };
  assert.equal(tagRejection(read, signer), undefined);
  assert.equal(tagRejection({ ...read, arm: 'y' }, signer), 'signature', 'another arm');
  assert.equal(tagRejection({ ...read, trajectory: { ...plain, id: 'e'.repeat(32) } }, signer), 'signature', 'another id');
  assert.equal(tagRejection({ ...read, trajectory: { ...plain, s: 1, n: 999_999_999 } }, signer), 'signature', 'other counters');
  assert.equal(tagRejection({ ...read, sig: undefined }, signer) ?? 'none', 'unsigned');
  assert.equal(tagRejection({ backend: 'x', route: 'ab' }, signer), undefined, 'nothing to trust: no trajectory, no arm');
  assert.equal(tagRejection({ backend: 'x', route: 'ab', arm: 'y' }, signer), 'unsigned', 'an arm without a signed trajectory');
  assert.equal(tagRejection(read, hmacSigner('another replica\'s secret')), 'signature');
  // Counters past what the steps could add are refused even under a valid signature (a leaked secret).
  const huge = { ...plain, step: 2, s: 999_999_990, n: 999_999_999 };
  assert.equal(tagRejection({ ...read, trajectory: huge, sig: signer.sign(signedText('ab', 'x', huge)) }, signer), 'counters');
  assert.equal(countersPossible({ ...plain, step: 2, n: 2 * MAX_LINES_PER_STEP, s: 0 }), true);
  assert.equal(countersPossible({ ...plain, step: 2, n: 2 * MAX_LINES_PER_STEP + 1, s: 0 }), false);
  assert.equal(countersPossible({ ...plain, step: 2, stages: 3 }), false);
  // One step adds at most MAX_LINES_PER_STEP lines, so an honest tag always passes.
  const many = Array.from({ length: 100 }, (_, i) => `r${i}: pick succeed with message: ok`).join('\n');
  assert.deepEqual([stepFeedback({ type: 'env', content: JSON.stringify({ infos: many }) }).lines], [MAX_LINES_PER_STEP]);
});

test('the secret: the config, else the environment, else one set once in the store', async () => {
  const claims = new Map<string, string>();
  const stats = { fallbacks: 0 } as StoreStats; // only fallbacks is read
  const store = {
    kind: 'redis' as const,
    stats: () => stats,
    claims: {
      claim: (key: string, value: string): Promise<{ first: boolean; value: string }> => {
        const held = claims.get(key);
        if (held !== undefined) return Promise.resolve({ first: false, value: held });
        claims.set(key, value);
        return Promise.resolve({ first: true, value });
      },
    },
  };
  assert.equal(await loadTagSecret('from-config-0123456', { [TAG_SECRET_ENV]: 'env' }, store), 'from-config-0123456');
  assert.equal(await loadTagSecret(undefined, { [TAG_SECRET_ENV]: 'from-env' }, store), 'from-env');
  const a = await loadTagSecret(undefined, {}, store);
  const b = await loadTagSecret(undefined, {}, store);
  assert.equal(a, b, 'two replicas sharing the store agree');
  assert.equal(a.length, 43);
  // Redis unavailable: the store answered from this process alone; no secret rather than one only it knows.
  const down = { ...store, claims: { claim: (key: string, value: string) => { stats.fallbacks++; return Promise.resolve({ first: true, value: `${key}${value}` }); } } };
  await assert.rejects(loadTagSecret(undefined, {}, down), /shared tag secret is unknown/);
  assert.deepEqual(
    [tagSecretSource('x'.repeat(16), {}, 'memory'), tagSecretSource(undefined, { [TAG_SECRET_ENV]: 'v' }, 'memory'), tagSecretSource(undefined, {}, 'redis'), tagSecretSource(undefined, {}, 'memory')],
    ['config', 'environment', 'store', 'process'],
  );
});
