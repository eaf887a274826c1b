/**
 * What waits for a slow client's socket while its answer is streamed counts under the memory budget
 * (docs/memory-budget.md#streamed-answers): a concurrent batch waits for it, a streamed answer's read waits for
 * room while an older batch holds the budget full, and a client that stops reading and is destroyed gives
 * everything back. Real loopback backend, real clients (raw sockets and fetch), the held count read from
 * `magma_gateway_memory_budget_held_bytes`.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { oneBackend, useFixtures, type Fixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { postNeverReading } from '../helpers/raw-http.js';

const BUDGET = 1024 * 1024;
/** Each streamed candidate's memory pad: one of them waiting for the socket is a quarter of the budget. */
const PAD = 256 * 1024;
/** Candidates of a streamed answer: 16 MB, more than loopback's socket buffers take before they refuse. */
const N = 64;

async function metric(gw: TestGateway, name: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

const held = (gw: TestGateway): Promise<number> => metric(gw, 'magma_gateway_memory_budget_held_bytes');

function candidate(requestId: string, id: number, index: number, pad: number): string {
  return JSON.stringify({
    request_id: requestId,
    source_id: id,
    candidate_index: index,
    status: 'completed',
    memory: { pad: 'x'.repeat(pad) },
    internal_steps: [],
    output: { say: `say ${index}`, tool_calls: [] },
    error: null,
  });
}

interface Backend {
  url: string;
  /** The streamed answer's writes were refused and its drain has not come: the gateway stopped reading it. */
  blocked: () => boolean;
  finished: () => boolean;
  /** Let the answers held back (request ids starting `gate-`) go. */
  open: (id: string) => void;
  /** Let every answer held back go (at teardown, before the gateway closes: it waits for its batches). */
  openAll: () => void;
  seen: string[];
}

/**
 * `stream-*`: N candidates of PAD, with a content-length, written as the socket takes them; `stream-rev-*` the same
 * in reverse order, its last (candidate 0) once opened. `hog-*`: one candidate
 * of `hog` bytes of memory, all but its last bytes written, the rest once opened. Others: one small candidate, at
 * once or, for `gate-*`, once opened. Every answer is for input 9 (`mkInput(9, ...)`).
 */
async function backend(f: Fixtures, hog = 0): Promise<Backend> {
  let blocked = false;
  let finished = false;
  const seen: string[] = [];
  const gates = new Map<string, () => void>();
  const gated = (id: string): Promise<void> => new Promise((resolve) => gates.set(id, resolve));
  const { url } = await f.rawAgent((res: ServerResponse, body: Buffer) => {
    const id = (JSON.parse(body.toString('utf8')) as { request_id: string }).request_id;
    seen.push(id);
    if (id.startsWith('stream-rev')) {
      // Every candidate but the first, last first; the first only once opened.
      const pieces = Array.from({ length: N }, (_, i) => candidate(id, 9, N - 1 - i, PAD)).map((c, i) => `${i === 0 ? '[' : ','}${c}${i === N - 1 ? ']' : ''}`);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(pieces.reduce((n, p) => n + p.length, 0)) });
      const last = pieces.pop() ?? '';
      for (const p of pieces) res.write(p);
      void gated(id).then(() => res.end(last, () => (finished = true)));
      return;
    }
    if (id.startsWith('stream-')) {
      void (id.startsWith('stream-gate') ? gated(id) : Promise.resolve()).then(() => {
        const pieces = Array.from({ length: N }, (_, c) => `${c === 0 ? '[' : ','}${candidate(id, 9, c, PAD)}${c === N - 1 ? ']' : ''}`);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(pieces.reduce((n, p) => n + p.length, 0)) });
        let c = 0;
        const pump = (): void => {
          blocked = false;
          while (c < N && !res.destroyed) {
            if (!res.write(pieces[c++])) {
              blocked = true;
              res.once('drain', pump);
              return;
            }
          }
          res.end(() => (finished = true));
        };
        pump();
      });
      return;
    }
    if (id.startsWith('hog-')) {
      const text = `[${candidate(id, 9, 0, hog)}]`;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(text.length) });
      res.write(text.slice(0, -16));
      void gated(id).then(() => res.end(text.slice(-16)));
      return;
    }
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`[${candidate(id, 9, 0, 0)}]`);
    };
    if (id.startsWith('gate-')) void gated(id).then(answer);
    else answer();
  });
  return {
    url,
    blocked: () => blocked,
    finished: () => finished,
    open: (id) => {
      const go = gates.get(id);
      assert.ok(go, `${id} is held at the backend`);
      go();
    },
    openAll: () => gates.forEach((go) => go()),
    seen,
  };
}

const streamBody = (id: string): string => JSON.stringify({ request_id: id, inputs: [mkInput(9, { num_outputs: N })] });

test('a client that stops reading a streamed answer: what waits for its socket is counted, a concurrent batch waits, destroying the client gives everything back', async (t) => {
  const f = useFixtures(t);
  const b = await backend(f);
  const gw = await f.gateway(oneBackend({ a: b.url }, { server: { memory_budget_mb: BUDGET / (1024 * 1024), stream_answers_over_mb: 1.5, admission_timeout_s: 60 } }));
  const socket = postNeverReading(gw.url, streamBody('stream-1'));
  f.defer(() => socket.destroy());
  await waitFor('the backend held back by the client that does not read', () => b.blocked(), { timeoutMs: 30_000 });
  await waitFor('a candidate waiting for the socket counted', async () => (await held(gw)) >= PAD, { timeoutMs: 10_000 });
  const counted = await held(gw);
  assert.ok(counted <= BUDGET, `the streamed batch holds ${counted} bytes, within the budget`);
  // 950 KB: it fits beside the streamed batch's body and objects (about 35 KB), not beside what waits for its socket.
  const big = gw.post({ request_id: 'big-1', inputs: [mkInput(9, { memory: { pad: 'p'.repeat(950_000) } })] });
  await waitFor('the concurrent batch waiting for room', async () => (await metric(gw, 'magma_gateway_admission_waiting')) === 1);
  assert.deepEqual(b.seen, ['stream-1'], 'it has not reached the backend');
  socket.destroy();
  const res = await big;
  assert.equal(res.status, 200, res.text);
  assert.equal((res.json as Cand[])[0]?.status, 'completed');
  await waitFor('everything given back', async () => (await held(gw)) === 0);
  assert.equal(b.finished(), false, 'the streamed answer was never read whole');
});

test('while an older batch holds the budget full, a streamed answer\'s read waits although its client reads; room resumes it and it completes', async (t) => {
  const f = useFixtures(t);
  // The hog's answer alone is just under the budget; with the streamed batch's body and objects it is over.
  const b = await backend(f, BUDGET - 12 * 1024);
  const gw = await f.gateway(oneBackend({ a: b.url }, { server: { memory_budget_mb: BUDGET / (1024 * 1024), stream_answers_over_mb: 1.5, admission_timeout_s: 60 } }));
  f.defer(() => b.openAll());
  const hog = gw.post({ request_id: 'hog-1', inputs: [mkInput(9)] });
  await waitFor('the hog at the backend', () => b.seen.includes('hog-1'));
  const streamed = fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: streamBody('stream-gate-1') });
  await waitFor('the streamed batch at the backend', () => b.seen.includes('stream-gate-1'));
  await waitFor('the hog\'s answer counted, the budget over', async () => (await held(gw)) > BUDGET);
  b.open('stream-gate-1');
  const res = await streamed;
  assert.equal(res.status, 200);
  assert.ok(res.body);
  const reader = res.body.getReader();
  let got = 0;
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      got += value.length;
    }
  })();
  await waitFor('the backend held back', () => b.blocked(), { timeoutMs: 30_000 });
  // Turns of the event loop in which a read paced only by the socket would go on; the client reads all it is sent.
  for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
  assert.equal(b.blocked(), true, 'the read waits for room, not for the client');
  assert.ok(got < N * PAD, `the client has ${got} bytes, not the answer`);
  b.open('hog-1');
  assert.equal((await hog).status, 200);
  await reading;
  assert.ok(got > N * PAD, `the whole answer came once there was room: ${got} bytes`);
  assert.equal(b.finished(), true);
  await waitFor('everything given back', async () => (await held(gw)) === 0);
});

test('candidates a streamed answer receives ahead of their turn are counted until written: a concurrent batch waits for them', async (t) => {
  const f = useFixtures(t);
  const b = await backend(f);
  const gw = await f.gateway(oneBackend({ a: b.url }, { server: { memory_budget_mb: BUDGET / (1024 * 1024), stream_answers_over_mb: 1.5, admission_timeout_s: 60 } }));
  f.defer(() => b.openAll());
  const streamed = gw.post(streamBody('stream-rev-1'));
  // The oldest batch held reads on over the budget (docs/memory-budget.md): it alone can never wait for itself.
  // N - 2: the splitter may still hold the last one received, until the bytes after it show where it ends.
  await waitFor('the candidates after the first held ahead of their turn, counted', async () => (await held(gw)) >= (N - 2) * PAD, { timeoutMs: 30_000 });
  const big = gw.post({ request_id: 'big-1', inputs: [mkInput(9, { memory: { pad: 'p'.repeat(950_000) } })] });
  await waitFor('the concurrent batch waiting for room', async () => (await metric(gw, 'magma_gateway_admission_waiting')) === 1);
  assert.deepEqual(b.seen, ['stream-rev-1'], 'it has not reached the backend');
  b.open('stream-rev-1');
  const res = await streamed;
  assert.equal(res.status, 200, res.text);
  const cands = res.json as Cand[];
  assert.deepEqual(cands.map((c) => c.candidate_index), Array.from({ length: N }, (_, i) => i), 'written in the contract\'s order');
  assert.ok(cands.every((c) => c.status === 'completed'));
  assert.equal((await big).status, 200);
  await waitFor('everything given back', async () => (await held(gw)) === 0);
});
