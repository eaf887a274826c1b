/**
 * Split assignment: a weighted choice that is a pure function of (request_id, input id) (docs/routing.md#the-memory-key-and-stickiness).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { numberMark } from '../../src/protocol/json/exact-json.js';
import type { Member } from '../../src/routing/routes.js';
import { hash32, pickWeighted, splitPoint } from '../../src/routing/split.js';
import { chooseArm } from '../helpers/split.js';

const AB: Member[] = [
  { name: 'qwen', weight: 90 },
  { name: 'gpt', weight: 10 },
];

function countArms(arms: readonly Member[], n: number, canServe?: (b: string) => boolean): Map<string, number> {
  const counts = new Map<string, number>();
  for (let id = 0; id < n; id++) {
    const arm = chooseArm('req-42', id, arms, canServe);
    counts.set(arm, (counts.get(arm) ?? 0) + 1);
  }
  return counts;
}

test('the same request id and input id always choose the same arm', () => {
  for (let id = 0; id < 200; id++) {
    assert.equal(chooseArm('replay-me', id, AB), chooseArm('replay-me', id, AB));
  }
});

test('the hash is a fixed function, identical on every replica and after restarts', () => {
  // Pinned values: changing the hash would re-route every replayed request.
  assert.equal(hash32(''), 0xab3e7c0b);
  assert.equal(hash32('req:1'), 0x383abd61);
  assert.notEqual(hash32('req:1'), hash32('req:2'));
});

test('an id given as a number marker chooses like the same integer as a number', () => {
  assert.equal(splitPoint('r', numberMark('17')), splitPoint('r', 17));
  assert.equal(splitPoint('r', -0), splitPoint('r', 0));
  const big = numberMark('123456789012345678901234567890');
  assert.equal(splitPoint('r', big), splitPoint('r', numberMark('123456789012345678901234567890')));
});

test('90:10 weights give 90% and 10% of 10000 ids within 3 points', () => {
  const counts = countArms(AB, 10000);
  const qwen = (counts.get('qwen') ?? 0) / 10000;
  assert.ok(Math.abs(qwen - 0.9) < 0.03, `qwen share ${qwen}`);
});

test('the request id takes part in the choice', () => {
  const arms: Member[] = [
    { name: 'a', weight: 1 },
    { name: 'b', weight: 1 },
  ];
  const differs = Array.from({ length: 50 }, (_, i) => `r${i}`).some((r) => chooseArm(r, 1, arms) !== chooseArm('r0', 1, arms));
  assert.ok(differs);
});

test('pickWeighted lays the point onto cumulative weights', () => {
  assert.equal(pickWeighted(0, AB).arm.name, 'qwen');
  assert.equal(pickWeighted(0.8999, AB).arm.name, 'qwen');
  assert.equal(pickWeighted(0.9, AB).arm.name, 'gpt');
  assert.equal(pickWeighted(0.95, AB).within.toFixed(6), '0.500000');
});

test('when the chosen arm cannot serve, a servable arm is chosen, deterministically', () => {
  const noQwen = (b: string): boolean => b !== 'qwen';
  for (let id = 0; id < 100; id++) {
    assert.equal(chooseArm('r', id, AB, noQwen), 'gpt');
  }
});

test("an unservable arm's traffic spreads over the others by their weights", () => {
  const arms: Member[] = [
    { name: 'a', weight: 50 },
    { name: 'b', weight: 30 },
    { name: 'c', weight: 20 },
  ];
  const before = new Map<number, string>();
  for (let id = 0; id < 10000; id++) before.set(id, chooseArm('req-42', id, arms));
  const counts = countArms(arms, 10000, (x) => x !== 'a');
  const b = (counts.get('b') ?? 0) / 10000;
  assert.ok(Math.abs(b - 0.6) < 0.03, `b share ${b}`); // 30 / (30 + 20)
  // Inputs that were on b or c stay where they were.
  for (let id = 0; id < 10000; id++) {
    if (before.get(id) !== 'a') assert.equal(chooseArm('req-42', id, arms, (x) => x !== 'a'), before.get(id));
  }
});

test('when no arm can serve, the first choice stands (dispatch falls back)', () => {
  assert.equal(chooseArm('r', 3, AB, () => false), chooseArm('r', 3, AB));
});
