/** The recent-batches ring and batch rate (src/batch/activity.ts), with an injected clock. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Activity, REQUEST_ID_CHARS, type BatchSummary } from '../../src/batch/activity.js';

function summary(id: string): Omit<BatchSummary, 'at' | 'seq'> {
  return {
    request_id: id, agent: 'default', client: null, inputs: 1, candidates: 1, routes: { ab: 1 }, backends: { a: 1 }, error_codes: {}, duration_ms: 3, overhead_ms: 0.5,
    streamed: false, cache_hits: null, input_rows: [{ id: '0', route: 'ab', arm: 'a', backend: 'a', candidates: 1, status: 'completed', cached: false, error_code: null }],
  };
}

test('the ring keeps the last N batches, newest first, and wraps in place', () => {
  const act = new Activity(() => 3, () => 1_000_000);
  for (const id of ['r1', 'r2']) act.recordBatch(summary(id));
  assert.deepEqual(act.recent().map((b) => b.request_id), ['r2', 'r1']);
  for (const id of ['r3', 'r4', 'r5']) act.recordBatch(summary(id));
  assert.deepEqual(act.recent().map((b) => b.request_id), ['r5', 'r4', 'r3']);
  assert.deepEqual(act.recent(2).map((b) => b.request_id), ['r5', 'r4']);
  assert.equal(act.recent()[0]!.at, new Date(1_000_000).toISOString());
});

test('a changed capacity (a reload) keeps the newest batches that fit', () => {
  let cap = 4;
  const act = new Activity(() => cap, () => 0);
  for (let i = 1; i <= 6; i++) act.recordBatch(summary(`r${i}`));
  cap = 2;
  act.recordBatch(summary('r7'));
  assert.deepEqual(act.recent().map((b) => b.request_id), ['r7', 'r6']);
  cap = 3;
  act.recordBatch(summary('r8'));
  act.recordBatch(summary('r9'));
  assert.deepEqual(act.recent().map((b) => b.request_id), ['r9', 'r8', 'r7']);
  cap = 0;
  act.recordBatch(summary('r10'));
  assert.deepEqual(act.recent().map((b) => b.request_id), ['r9', 'r8', 'r7'], 'capacity 0 records nothing more');
});

test('a long request_id is cut: the ring stays bounded whatever a client sends', () => {
  const act = new Activity(() => 2, () => 0);
  act.recordBatch(summary('x'.repeat(10_000)));
  assert.equal(act.recent()[0]!.request_id.length, REQUEST_ID_CHARS);
});

test('batches per second count the last 10 whole seconds, not the one still running', () => {
  let now = 100_000;
  const act = new Activity(() => 10, () => now);
  now += 20_000; // up for 20 s
  for (let s = 0; s < 10; s++) {
    for (let k = 0; k < 3; k++) act.recordBatch(summary(`s${s}-${k}`)); // 3 a second for 10 s
    now += 1000;
  }
  act.recordBatch(summary('now')); // in the current second: not counted yet
  assert.equal(act.batchesPerSecond(), 3);
  now += 5000;
  // Seconds 125..134: 3 a second in 125..129, the one batch of second 130, none since: 16 in 10 s.
  assert.equal(act.batchesPerSecond(), 1.6);
});

test('the last reload is remembered with its outcome', () => {
  const act = new Activity(() => 1, () => Date.UTC(2026, 0, 1));
  assert.equal(act.lastReload(), null);
  act.recordReload({ trigger: 'api', ok: false, detail: 'bad yaml' });
  assert.deepEqual(act.lastReload(), { at: '2026-01-01T00:00:00.000Z', trigger: 'api', ok: false, detail: 'bad yaml' });
});

test('the list leaves the inputs out; a batch opens by its seq, inputs included, while the ring holds it', () => {
  const act = new Activity(() => 2, () => 0);
  for (const id of ['r1', 'r2', 'r3']) act.recordBatch(summary(id));
  const [newest] = act.recent();
  assert.equal(newest!.seq, 3);
  assert.equal('input_rows' in newest!, false);
  assert.deepEqual(act.batch(3)?.input_rows.map((r) => r.id), ['0']);
  assert.equal(act.batch(1), undefined, 'dropped from the ring');
  assert.equal(act.recorded, 3);
});
