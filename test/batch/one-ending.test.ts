/**
 * A batch has one ending whatever its answer's shape (batch/batch-cycle.ts): a streamed answer and one written
 * whole are listed alike in the admin listener's recent batches (`GET /gateway/batches`), and their `batch`
 * log lines carry the same fields (client_wait_ms and cache_hits included), the streamed one saying so.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loggerOptions } from '../../src/logging.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';
import { sendThenRead } from '../helpers/raw-http.js';

const KEY = 'team-a-key-5d2c8e0b7a1f9364';

test('a streamed batch and a whole one are both in GET /gateway/batches and log the same fields', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const lines: Record<string, unknown>[] = [];
  const stream = { write: (l: string): void => void lines.push(JSON.parse(l) as Record<string, unknown>) };
  const gw = await f.gateway(
    oneBackend({ a }, {
      route: { cache: 'always' },
      cache: {},
      // Every answer over 100 bytes streams, where the client can take chunked framing.
      server: { stream_answers_over_mb: 0.0001 },
      // Limited, so the batch goes through client admission (and may log client_wait_ms).
      clients: { 'team-a': { key: KEY, max_candidates_per_minute: 1000 } },
    }),
    { logger: { ...loggerOptions('info'), stream } },
  );
  const body = (id: string): string => JSON.stringify({ request_id: id, inputs: [mkInput(1, { memory: { run: id } })] });
  const head = (http: string, length: number): string =>
    `POST /v1/responses ${http}\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${length}`;
  // HTTP/1.1: streamed (chunked, the overhead a trailer). HTTP/1.0 cannot take chunked framing: written whole.
  const streamed = await sendThenRead(gw.url, head('HTTP/1.1', Buffer.byteLength(body('s-1'))), body('s-1'));
  assert.equal(streamed.status, 200, streamed.raw.slice(0, 300));
  assert.equal(streamed.headers['transfer-encoding'], 'chunked', 'streamed');
  const whole = await sendThenRead(gw.url, head('HTTP/1.0', Buffer.byteLength(body('w-1'))), body('w-1'));
  assert.equal(whole.status, 200, whole.raw.slice(0, 300));
  assert.ok(whole.headers['content-length'] !== undefined, 'written whole');

  const listed = (await (await fetch(`${gw.adminUrl}/gateway/batches`)).json()) as { batches: Record<string, unknown>[] };
  const byId = new Map(listed.batches.map((b) => [b.request_id, b]));
  const s = byId.get('s-1');
  const w = byId.get('w-1');
  assert.ok(s !== undefined, 'the streamed batch is listed');
  assert.ok(w !== undefined, 'the whole batch is listed');
  assert.deepEqual(Object.keys(s).sort(), Object.keys(w).sort());
  assert.deepEqual([s.client, s.inputs, s.candidates, s.routes], ['team-a', 1, 1, { default: 1 }]);
  assert.deepEqual([w.client, w.inputs, w.candidates, w.routes], ['team-a', 1, 1, { default: 1 }]);

  const logged = (id: string): Record<string, unknown> => {
    const found = lines.filter((l) => l.msg === 'batch' && l.request_id === id);
    assert.equal(found.length, 1, `one batch line for ${id}`);
    return found[0]!;
  };
  const sl = logged('s-1');
  const wl = logged('w-1');
  assert.equal(sl.streamed, true);
  assert.equal(wl.streamed, undefined);
  const fields = (l: Record<string, unknown>): string[] => Object.keys(l).filter((k) => k !== 'streamed' && k !== 'client_wait_ms').sort();
  assert.deepEqual(fields(sl), fields(wl));
  for (const l of [sl, wl]) {
    assert.equal(l.cache_hits, 0);
    assert.equal(l.client, 'team-a');
    assert.equal(l.candidates, 1);
  }
});
