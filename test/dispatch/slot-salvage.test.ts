/**
 * Faulty candidate slots salvaged (docs/protocol-fidelity.md#failures; docs/limits-and-edges.md): when a backend's answer is
 * partly bad, the good candidates are kept and the bad slots go to the route's fallback; only what the
 * fallback cannot fix stays an error candidate. The decision (faultySlots) is pure and tested without HTTP,
 * then the whole path through real loopback agents.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Item } from '../../src/dispatch/batch-item.js';
import { faultySlots } from '../../src/dispatch/failover.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import type { Slot } from '../../src/protocol/answer/response-check.js';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand } from '../helpers/gateway.js';

const f = useFixtures();
const good: Slot<string> = { ok: true, candidate: 'c' };
const bad = (reason: string): Slot<string> => ({ ok: false, reason });

/** Three inputs as the batch path holds them (read by the indexer), for items to carry. */
const read = readAgentRequest(
  Buffer.from(JSON.stringify({ request_id: 'r', inputs: [0, 1, 2].map((id) => ({ id, instruction: { type: 'user', content: 'x' } })) })),
  { maxOutputsPerInput: 1024, maxJsonDepth: 64, memoryKey: '_gateway' },
);
if (!read.ok) throw new Error('the fixture request is invalid');
const inputs = read.request.inputs;

function item(index: number, count: number, offset: number, fallbacks: string[]): Item {
  const input = inputs[index];
  if (input === undefined) throw new Error(`no input ${index}`);
  return { index, input, backend: 'a', count, offset, fallbacks, route: 'r' };
}

test('faultySlots: runs of bad candidates become items of their own; items without a fallback keep theirs', () => {
  const items = [item(0, 5, 0, ['b']), item(1, 2, 3, []), item(2, 3, 0, ['b', 'c'])];
  const rows = [
    [good, bad('candidate 1 missing'), bad('candidate 2 missing'), good, bad('duplicate candidate_index 4')],
    [bad('invalid'), good],
    [good, good, good],
  ];
  const out = faultySlots(items, rows);
  assert.ok(out !== undefined);
  assert.deepEqual(
    out.items.map((it) => [it.index, it.offset, it.count, it.fallbacks]),
    [
      [0, 1, 2, ['b']],
      [0, 4, 1, ['b']],
    ],
  );
  // Input 0 has two runs: one sub-request carries an input once, so they go in two waves.
  assert.deepEqual(out.waves.map((w) => w.map((it) => [it.index, it.offset])), [[[0, 1]], [[0, 4]]]);
  assert.equal(out.failure.code, 'gateway_backend_invalid_response');
  assert.equal(out.failure.message, 'candidate 1 missing (and 2 more candidates of the same answer)');
  assert.equal(faultySlots([item(0, 2, 0, ['b'])], [[good, good]]), undefined);
  assert.equal(faultySlots([item(0, 2, 0, [])], [[bad('x'), bad('y')]]), undefined, 'nothing to move without a fallback');
  // An offset is kept: the moved run is addressed where the item's candidates start.
  assert.deepEqual(faultySlots([item(0, 3, 4, ['b'])], [[good, good, bad('x')]])?.items.map((it) => [it.offset, it.count]), [[6, 1]]);
});

async function twoBackends(primary: Parameters<Fixtures['agent']>[0], fallback: Parameters<Fixtures['agent']>[0] = {}) {
  const a = await f.agent({ name: 'a', ...primary });
  const b = await f.agent({ name: 'b', ...fallback });
  const gw = await f.gateway({ backends: { a: { url: a.url }, b: { url: b.url } }, routes: [{ name: 'd', backend: 'a', fallback: ['b'] }] });
  return { a, b, gw };
}
type Fixtures = typeof f;

test('a dropped candidate and an invalid one go to the fallback; the good ones stay the primary\'s', async () => {
  const { b, gw } = await twoBackends({ behaviour: { missing: true, malformedCandidate: 1 } });
  const res = await gw.post({ request_id: 'salvage-1', inputs: [mkInput(1, { num_outputs: 4 }), mkInput(2)] });
  assert.equal(res.status, 200);
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => [c.source_id, c.candidate_index, c.status, c.memory._gateway?.backend]), [
    [1, 0, 'completed', 'a'],
    [1, 1, 'completed', 'b'],
    [1, 2, 'completed', 'a'],
    [1, 3, 'completed', 'a'],
    [2, 0, 'completed', 'b'],
  ]);
  // The fallback was asked for the two bad slots only.
  const sent = b.requestsTo('/v1/responses');
  assert.equal(sent.length, 1);
  const body = sent[0]!.body as { inputs: { id: number; num_outputs: number }[] };
  assert.deepEqual(body.inputs.map((i) => [i.id, i.num_outputs]), [[1, 1], [2, 1]]);
});

test('a repeated candidate: the slots it spoils are filled by the fallback, the others kept', async () => {
  const { gw } = await twoBackends({ behaviour: { duplicate: true, missing: true } });
  const res = await gw.post({ request_id: 'salvage-2', inputs: [mkInput(1, { num_outputs: 3 })] });
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => c.candidate_index), [0, 1, 2]);
  assert.ok(cands.every((c) => c.status === 'completed'), JSON.stringify(cands.map((c) => c.error)));
  assert.ok(cands.some((c) => c.memory._gateway?.backend === 'a'), 'good candidates kept');
  assert.ok(cands.some((c) => c.memory._gateway?.backend === 'b'), 'bad slots from the fallback');
});

test('what the fallback cannot fix stays an error candidate naming the fallback\'s failure', async () => {
  const { gw } = await twoBackends({ behaviour: { malformedCandidate: 0 } }, { behaviour: { status: 500 } });
  const res = await gw.post({ request_id: 'salvage-3', inputs: [mkInput(1, { num_outputs: 2 })] });
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => [c.status, c.error?.code ?? null, c.memory._gateway?.backend]), [
    ['error', 'gateway_backend_http_error', 'b'],
    ['completed', null, 'a'],
  ]);
});
