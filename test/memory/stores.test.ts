/**
 * Large bodies live in stores their batch's hold gives back (docs/memory-budget.md#where-the-bytes-live): the
 * budget's side (adopt, release, keep), then what meets it in real use over real sockets: a large answer replayed
 * from the replay store, answered again from the response cache, and compared by a shadow after the batch's bytes
 * went back, each with the bytes the backend sent.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { test } from 'node:test';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';
import { MemoryBudget, type BudgetHold } from '../../src/memory/budget.js';
import { BodyBytes } from '../../src/protocol/body-bytes.js';
import type { StoreOwner } from '../../src/protocol/byte-store.js';
import { freshRequestId, metricValue, slotInput } from '../cache/cache-helpers.js';
import { useFixtures, type Fixtures } from '../helpers/fixtures.js';
import type { Cand } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const MB = 1024 * 1024;

/** `bytes` of a large body received under `hold`, as a socket delivers them. */
function receivedUnder(owner: StoreOwner, bytes: Buffer): Buffer {
  // Chunked (no declared length): past 1 MiB it goes into a store.
  const b = new BodyBytes({ max: bytes.length, owner });
  for (let at = 0; at < bytes.length; at += 65_536) b.add(bytes.subarray(at, at + 65_536));
  return b.received();
}

test('a hold gives its stores back when released; what keeps it delays that until it lets go; a store adopted after is given back at once', () => {
  const budget = new MemoryBudget({ limit: () => 64 * MB, timeoutMs: () => 1000 });
  const bytes = Buffer.alloc(2 * MB, 'a');
  let hold: BudgetHold | undefined;
  budget.admit(bytes.length, (h) => (hold = h), () => undefined);
  assert.ok(hold !== undefined);
  const body = receivedUnder(hold, bytes);
  assert.equal(body.equals(bytes), true);
  const letGo = hold.keep();
  hold.release();
  assert.equal(body.length, bytes.length, 'kept: the bytes are still there');
  assert.equal(budget.bytesHeld, bytes.length, 'and still counted');
  letGo();
  letGo();
  assert.equal(body.length, 0, 'let go: the pages went back');
  assert.equal(budget.bytesHeld, 0);
  const late = receivedUnder(hold, bytes);
  assert.equal(late.length, 0, 'adopted by a released hold: given back at once');
});

type Batch = { request_id: string; inputs: { id: number; num_outputs?: number }[] };

/** A backend answering every candidate with `say`; counts the batches it was sent. */
async function backend(f: Fixtures, say: string): Promise<{ url: string; calls: () => number }> {
  let calls = 0;
  const s = await f.server((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url !== '/v1/responses') {
        res.end(JSON.stringify(req.url === '/health' ? { status: 'ready' } : inferenceOnlyInfo('stores')));
        return;
      }
      calls++;
      const b = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Batch;
      const out = b.inputs.flatMap((inp) =>
        Array.from({ length: inp.num_outputs ?? 1 }, (_, c) =>
          JSON.stringify({ request_id: b.request_id, source_id: inp.id, candidate_index: c, status: 'completed', memory: {}, internal_steps: [], output: { say, tool_calls: [] }, error: null }),
        ),
      );
      // Chunked, in two writes: an answer past 1 MiB without a length is held in a store.
      const text = `[${out.join(',')}]`;
      res.write(text.slice(0, 100));
      res.end(text.slice(100));
    });
  });
  return { url: s.url, calls: () => calls };
}

test('a 1.5 MB answer held in a store: replayed, answered from the cache and compared by a shadow after its batch gave it back, byte for byte', async (t) => {
  const f = useFixtures(t);
  const say = 'é'.repeat(0.75 * MB);
  const primary = await backend(f, say);
  const shadow = await backend(f, say);
  const gw = await f.gateway({
    backends: { p: { url: primary.url }, s: { url: shadow.url } },
    routes: [{ name: 'main', backend: 'p', cache: 'deterministic', shadow: ['s'] }],
    cache: { max_mb: 64, ttl_s: 3600 },
  });
  const input = slotInput(1, 0, undefined);
  const first = freshRequestId();
  const a = await gw.post({ request_id: first, inputs: [input] });
  assert.equal(a.status, 200, a.text.slice(0, 300));
  assert.equal(((a.json as Cand[])[0]?.output as { say: string }).say, say);

  // The same batch again: the replay store's copy, not the backend.
  const again = await gw.post({ request_id: first, inputs: [input] });
  assert.equal(again.status, 200);
  assert.equal(again.text, a.text, 'replayed byte for byte');
  assert.equal(primary.calls(), 1);

  // A new batch with the same input: the cache's copy, stored after the answer was written.
  await waitFor('the entry stored', async () => (await metricValue(gw, 'magma_gateway_cache_stores_total')) >= 1);
  const b = await gw.post({ request_id: freshRequestId(), inputs: [input] });
  assert.equal(b.status, 200, b.text.slice(0, 300));
  assert.equal(b.headers.get('x-gateway-cache-hits'), '1');
  assert.equal(((b.json as Cand[])[0]?.output as { say: string }).say, say, 'the cached candidate says what the backend said');
  assert.equal(primary.calls(), 1);

  // The shadow's answer is compared with the primary's decision, read before the batch's bytes went back.
  await waitFor('the shadow compared', async () => (await metricValue(gw, 'magma_gateway_shadow_agreement_total', { backend: 's' })) >= 1);
  assert.equal(await metricValue(gw, 'magma_gateway_shadow_agreement_total', { backend: 's', agreed: 'true' }), 1);
  await waitFor('everything given back', async () => (await metricValue(gw, 'magma_gateway_memory_budget_held_bytes')) === 0);
});
