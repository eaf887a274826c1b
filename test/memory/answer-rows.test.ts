/**
 * The memory bench's answer rows over real sockets, scaled down (docs/memory-budget.md): concurrent ensemble
 * batches whose answers together are several budgets, answers over OFFLOAD_BYTES indexed on the reader thread (a byte
 * order mark before one, a wrong last byte in another), and shadows whose answers never end. Statuses, the
 * gateway's own count of what it holds (magma_gateway_memory_budget_held_bytes), no dropped connection;
 * timings and RSS stay in the bench (bench/memory-rows.ts).
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { test } from 'node:test';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';
import { OFFLOAD_BYTES, offloaded } from '../../src/reader/reader.js';
import { useFixtures, type Fixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const MB = 1024 * 1024;

async function held(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('magma_gateway_memory_budget_held_bytes '));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

async function metric(gw: TestGateway, name: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? 0);
}

type Answer = (req: { request_id: string; inputs: { id: number; num_outputs?: number }[] }, res: ServerResponse) => void;

/** A backend on loopback: /health and /v1/info answered, /v1/responses by `answer` with the parsed request. */
async function backend(f: Fixtures, answer: Answer): Promise<string> {
  const s = await f.server((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/v1/responses') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(req.url === '/health' ? { status: 'ready' } : inferenceOnlyInfo('rows')));
        return;
      }
      answer(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Parameters<Answer>[0], res);
    });
  });
  return s.url;
}

/** The candidates asked for, each saying `say`. */
function candidates(req: Parameters<Answer>[0], say: string): string {
  const out: string[] = [];
  for (const inp of req.inputs) {
    for (let c = 0; c < (inp.num_outputs ?? 1); c++) {
      out.push(JSON.stringify({ request_id: req.request_id, source_id: inp.id, candidate_index: c, status: 'completed', memory: {}, internal_steps: [], output: { say, tool_calls: [] }, error: null }));
    }
  }
  return `[${out.join(',')}]`;
}

test('16 concurrent ensemble batches answering ~3 MB each under an 8 MB budget: all 200, every candidate whole, the count within one batch of the budget', async (t) => {
  // The bench's 16 x 50 MB under 400 MB, scaled: together the answers are six budgets.
  const f = useFixtures(t);
  const say = 's'.repeat(1.5 * MB);
  const url = await backend(f, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(candidates(req, say));
  });
  const gw = await f.gateway({
    server: { memory_budget_mb: 8 },
    state: { replay_ttl_s: 0 },
    backends: { a: { url }, b: { url } },
    routes: [{ name: 'd', ensemble: { a: 1, b: 1 } }],
  });
  let most = 0;
  let running = true;
  const sampler = (async () => {
    while (running) most = Math.max(most, await held(gw));
  })();
  const results = await Promise.all(Array.from({ length: 16 }, (_, i) => gw.post({ request_id: `e${i}`, inputs: [mkInput(1, { num_outputs: 2 })] })));
  running = false;
  await sampler;
  for (const r of results) {
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const cands = r.json as Cand[];
    assert.equal(cands.length, 2);
    for (const c of cands) {
      assert.equal(c.status, 'completed', JSON.stringify(c.error));
      assert.equal((c.output as { say: string }).say.length, say.length);
    }
  }
  // The oldest batch always reads on (it is what frees room): one batch's answers (2 x 1.5 MB) past the budget, and
  // each of the other 31 answers one read past it (the read that found the budget full: at most what its socket
  // had buffered, under 128 KiB).
  assert.ok(most <= 8 * MB + 3.2 * MB + 31 * 128 * 1024, `held ${most} bytes`);
  assert.ok(most > 0, 'the answers were counted');
  await waitFor('everything given back', async () => (await held(gw)) === 0);
});

test('answers over OFFLOAD_BYTES, handed to the reader thread as the memory they were received into and indexed there: one after a byte order mark is taken, one wrong at its last byte is refused', async (t) => {
  const f = useFixtures(t);
  const say = 'é'.repeat(OFFLOAD_BYTES / 2 + 0.25 * MB); // 8.5 MB of UTF-8
  const bom = await backend(f, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(candidates(req, say))]));
  });
  const broken = await backend(f, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(candidates(req, say).slice(0, -1) + '}');
  });
  const gw = await f.gateway({
    backends: { bom: { url: bom }, broken: { url: broken } },
    routes: [{ name: 'bom', match: { 'attributes.to': 'bom' }, backend: 'bom' }, { name: 'd', backend: 'broken' }],
  });
  const before = { ...offloaded.answer };
  const ok = await gw.post({ request_id: 'b1', inputs: [mkInput(1, { attributes: { to: 'bom' } })] });
  assert.equal(offloaded.answer.jobs - before.jobs, 1);
  assert.equal(offloaded.answer.copied - before.copied, 0, 'handed over as the memory it was received into, not copied here');
  assert.equal(ok.status, 200);
  const [c] = ok.json as Cand[];
  assert.equal(c?.status, 'completed', JSON.stringify(c?.error));
  assert.equal((c?.output as { say: string }).say, say);
  const bad = await gw.post({ request_id: 'b2', inputs: [mkInput(1)] });
  assert.equal(bad.status, 200);
  const [e] = bad.json as Cand[];
  assert.equal(e?.status, 'error');
  assert.equal(e?.error?.code, 'gateway_backend_invalid_response');
  assert.match(e?.error?.message ?? '', /not a valid AgentResponse: .* at byte \d+/);
});

test('8 batches whose shadow answer never ends: every batch answered, each shadow dropped, nothing held after', async (t) => {
  const f = useFixtures(t);
  const plain = await backend(f, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(candidates(req, 'hi'));
  });
  const endless = await backend(f, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('[');
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(chunk)), 2);
    res.on('close', () => clearInterval(timer));
  });
  const gw = await f.gateway({
    server: { memory_budget_mb: 4 },
    backends: { plain: { url: plain }, endless: { url: endless, max_response_mb: 64 } },
    routes: [{ name: 'd', backend: 'plain', shadow: ['endless'] }],
  });
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => gw.post({ request_id: `s${i}`, inputs: [mkInput(1)] })));
  for (const r of results) {
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal((r.json as Cand[])[0]?.status, 'completed');
  }
  const ended = async (): Promise<number> => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    let n = 0;
    for (const l of text.split('\n')) if (l.startsWith('magma_gateway_shadow_requests_total{') && l.includes('backend="endless"')) n += Number(l.slice(l.lastIndexOf(' ') + 1));
    return n;
  };
  await waitFor('every shadow ended', async () => (await ended()) === 8, { timeoutMs: 30_000 });
  assert.ok((await metric(gw, 'magma_gateway_shadows_shed_total')) >= 1, 'over the budget the shadows are shed');
  await waitFor('nothing held', async () => (await held(gw)) === 0);
});
