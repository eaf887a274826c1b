/**
 * Why a backend answer's read is paused (src/upstream/read-pauses.ts): past READ_PER_TURN bytes in one turn of
 * the event loop it pauses until the turn's end; the budget and the turn each resume only their own reason, and
 * the read goes on once none is left, in a microtask (never inside another connection's parser callback); nothing
 * moves once the call is settled.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { READ_PER_TURN, ReadPauses } from '../../src/upstream/read-pauses.js';

function setup(): { p: ReadPauses; calls: string[]; turnEnds: (() => void)[]; live: { v: boolean } } {
  const calls: string[] = [];
  const turnEnds: (() => void)[] = [];
  const live = { v: true };
  const p = new ReadPauses({ pause: () => calls.push('pause'), resume: () => calls.push('resume') }, () => live.v, (fn) => turnEnds.push(fn));
  return { p, calls, turnEnds, live };
}

/** The controller resumes in a microtask: the ones queued so far have run once this resolves. */
const microtasks = (): Promise<void> => new Promise((resolve) => queueMicrotask(resolve));

test('past READ_PER_TURN bytes in one turn the read pauses, and goes on at the turn\'s end', async () => {
  const { p, calls, turnEnds } = setup();
  const chunk = 64 * 1024;
  for (let read = chunk; read < READ_PER_TURN; read += chunk) p.read(chunk);
  assert.deepEqual(calls, [], 'under the bound: read on');
  p.read(chunk);
  assert.deepEqual(calls, ['pause']);
  assert.equal(turnEnds.length, 1);
  turnEnds.shift()?.();
  await microtasks();
  assert.deepEqual(calls, ['pause', 'resume']);
  // The count starts again in the next turn.
  p.read(chunk);
  assert.deepEqual(calls, ['pause', 'resume']);
});

test('reasons compose: the turn\'s end does not resume a read the budget still holds, nor room a read the turn holds', async () => {
  const { p, calls, turnEnds } = setup();
  p.pause('budget');
  p.read(READ_PER_TURN);
  assert.deepEqual(calls, ['pause'], 'one pause for two reasons');
  turnEnds.shift()?.();
  await microtasks();
  assert.deepEqual(calls, ['pause'], 'the budget still holds it');
  p.resume('budget');
  assert.deepEqual(calls, ['pause'], 'not at once: room may come inside another connection\'s parser callback');
  await microtasks();
  assert.deepEqual(calls, ['pause', 'resume']);
  p.resume('budget');
  await microtasks();
  assert.deepEqual(calls, ['pause', 'resume'], 'a reason resumed twice resumes once');
  p.read(READ_PER_TURN);
  p.pause('budget');
  p.resume('budget');
  await microtasks();
  assert.deepEqual(calls, ['pause', 'resume', 'pause'], 'the turn still holds it');
  turnEnds.shift()?.();
  await microtasks();
  assert.deepEqual(calls, ['pause', 'resume', 'pause', 'resume']);
});

test('paused again before its resume ran, or settled, the read stays paused', async () => {
  const { p, calls, live } = setup();
  p.pause('budget');
  p.resume('budget');
  p.pause('budget');
  await microtasks();
  assert.deepEqual(calls, ['pause', 'pause'], 'no resume of a read paused again');
  p.resume('budget');
  live.v = false;
  await microtasks();
  assert.deepEqual(calls, ['pause', 'pause']);
});

test('once the call is settled nothing is paused or resumed', () => {
  const { p, calls, turnEnds, live } = setup();
  p.read(READ_PER_TURN);
  live.v = false;
  turnEnds.shift()?.();
  p.pause('budget');
  assert.deepEqual(calls, ['pause']);
});
