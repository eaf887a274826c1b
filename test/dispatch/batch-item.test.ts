/**
 * The planner decides each leg's arm (docs/routing.md#the-memory-key-and-stickiness and docs/routing.md#ensembles):
 * dispatch only carries it into the items and the memory tag.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { itemsOf, movedTo } from '../../src/dispatch/batch-item.js';
import { candidateTagOf } from '../../src/protocol/memory-tag.js';
import { legArm, type BatchPlan, type InputPlan } from '../../src/routing/plan.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';

function input(index: number, extra: Partial<InputPlan>): InputPlan {
  return { index, route: 'r', sticky: false, continued: false, legs: [], shadows: [], ...extra };
}

/** The request the plan is for, read as the gateway reads it. */
const REQUEST = (() => {
  const input = (id: number, n: number): string => `{"id":${id},"instruction":{"type":"env","content":"x"},"num_outputs":${n}}`;
  const r = readAgentRequest(Buffer.from(`{"request_id":"r","inputs":[${input(0, 3)},${input(1, 2)},${input(2, 3)}]}`), { maxOutputsPerInput: 8, maxJsonDepth: 16, memoryKey: '_gateway' });
  assert.ok(r.ok);
  return r.request;
})();

const plan: BatchPlan = {
  inputs: [
    input(0, { legs: [{ backend: 'a', count: 3, offset: 0, fallbacks: ['b'] }] }),
    input(1, { route: 'ab', arm: 'b', legs: [{ backend: 'c', count: 2, offset: 0, fallbacks: [] }] }),
    input(2, {
      route: 'ens',
      legs: [
        { backend: 'a', count: 2, offset: 0, fallbacks: ['b'] },
        { backend: 'b', count: 1, offset: 2, fallbacks: ['a'] },
      ],
    }),
  ],
};

test('a plain backend leg has no arm, a split keeps its assigned arm on any backend, an ensemble leg is its member', () => {
  assert.equal(legArm(plan.inputs[0]!, plan.inputs[0]!.legs[0]!), undefined);
  assert.equal(legArm(plan.inputs[1]!, plan.inputs[1]!.legs[0]!), 'b');
  assert.deepEqual(plan.inputs[2]!.legs.map((l) => legArm(plan.inputs[2]!, l)), ['a', 'b']);
});

test('items follow the plan in input then candidate order, with counts, offsets and arms as planned', () => {
  assert.deepEqual(
    itemsOf(plan, REQUEST).map((i) => [i.index, i.input.id, i.backend, i.count, i.offset, i.route, i.arm]),
    [[0, 0, 'a', 3, 0, 'r', undefined], [1, 1, 'c', 2, 0, 'ab', 'b'], [2, 2, 'a', 2, 0, 'ens', 'a'], [2, 2, 'b', 1, 2, 'ens', 'b']],
  );
});

test('a moved item is tagged with the backend that produced it and keeps its arm', () => {
  const [, split] = itemsOf(plan, REQUEST);
  const first = itemsOf(plan, REQUEST)[0]!;
  assert.deepEqual(candidateTagOf(first), { backend: 'a', route: 'r' });
  assert.equal(Object.hasOwn(candidateTagOf(first), 'arm'), false, 'no arm key at all, so the tag round-trips as before');
  const moved = movedTo(first, 'b');
  assert.deepEqual(candidateTagOf(moved), { backend: 'b', route: 'r' });
  assert.deepEqual(moved.fallbacks, []);
  assert.deepEqual(first.fallbacks, ['b'], 'the original item is unchanged');
  assert.deepEqual(candidateTagOf(movedTo(split!, 'z')), { backend: 'z', route: 'ab', arm: 'b' });
});
