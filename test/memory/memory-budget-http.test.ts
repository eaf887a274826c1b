/**
 * The memory budget and the bounded error paths over real sockets (docs/memory-budget.md), each test a row
 * of what a client or a backend can send, scaled down where the behaviour does not depend on the size (said
 * at each): bounded 422s from element counts, answers of millions of elements, FIFO admission with its 503,
 * headers-only connections, `?query` and chunked bodies counted, answers over the whole budget, shadows shed,
 * and the event loop kept free while a large body is read.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { test } from 'node:test';
import { inferenceOnlyInfo, startAgentServer } from '../../demo/agents/agent-server.js';
import { readBatch } from '../../src/batch/read-batch.js';
import type { Logger } from '../../src/logging.js';
import { parseAgentRequest } from '../../src/protocol/request.js';
import type { ValidationIssue } from '../../src/protocol/types.js';
import { useFixtures, type Fixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { postBytes } from '../helpers/raw-http.js';
import { waitFor } from '../helpers/wait.js';

/** `[0,0,...]` of about `bytes` bytes: an element every two bytes. */
function zeros(bytes: number): Buffer {
  const n = Math.floor(bytes / 2);
  // '[' then "0," n - 1 times then "0]": n elements in 2n + 1 bytes.
  return Buffer.concat([Buffer.from('['), Buffer.alloc((n - 1) * 2, '0,'), Buffer.from('0]')]);
}

async function metric(gw: TestGateway, name: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

/** An agent that holds each batch until the test releases it; `seen` lists the request ids in arrival order. */
async function gatedAgent(f: Fixtures): Promise<{ url: string; gates: (() => void)[]; seen: string[] }> {
  const gates: (() => void)[] = [];
  const seen: string[] = [];
  const agent = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async (_input, ctx) => {
      seen.push(ctx.requestId);
      await new Promise<void>((resolve) => gates.push(resolve));
      return { say: 'done' };
    },
  });
  f.defer(() => agent.close());
  return { url: agent.url, gates, seen };
}

const batch = (id: string, pad: number): Buffer =>
  Buffer.from(JSON.stringify({ request_id: id, inputs: [mkInput(1, { memory: { pad: 'p'.repeat(pad) } })] }));

test('a 2 MB `[0,0,...]` inputs body gets a small 422: the first problems, in pydantic\'s words, and a count of the rest', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent();
  const gw = await f.gateway({ server: { max_validation_errors: 50 }, backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const body = Buffer.concat([Buffer.from('{"request_id":"z","inputs":'), zeros(2 * 1024 * 1024), Buffer.from('}')]);
  const res = await postBytes(gw.url, body);
  assert.equal(res.status, 422);
  assert.ok(res.body.length < 32 * 1024, `a bounded detail, not one per element: ${res.body.length} bytes`);
  const detail = (JSON.parse(res.body.toString()) as { detail: ValidationIssue[] }).detail;
  // 50 listed, the rest of the first 4096 inputs (server.max_candidates_per_batch) counted, then the limit.
  assert.equal(detail.length, 52);
  const small = parseAgentRequest('{"request_id":"z","inputs":[0,0,0]}', { maxOutputsPerInput: 1024 });
  assert.ok(!small.ok);
  assert.deepEqual(detail.slice(0, 3), small.detail, 'each listed problem as the whole parse words it');
  assert.deepEqual(detail[49]!.loc, ['body', 'inputs', 49]);
  assert.equal(detail[50]!.type, 'too_many_errors');
  assert.equal(detail[50]!.input, 4096 - 50);
  assert.equal(detail[51]!.type, 'too_long');
  assert.equal(detail[51]!.input, 1024 * 1024);
  assert.equal(a.requestsTo('/v1/responses').length, 0, 'nothing reached the backend');
  assert.equal((await gw.post({ request_id: 'after', inputs: [mkInput(1)] })).status, 200, 'the gateway serves on');
});

test('an invalid input over 1 MiB is described by its size, not decoded; a smaller one in the same body in pydantic\'s words', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent();
  const gw = await f.gateway({ backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const input = (id: number, memoryBytes: number): string => JSON.stringify({ ...mkInput(id), memory: { pad: 'x'.repeat(memoryBytes) }, num_outputs: 'two' });
  const big = input(1, 1024 * 1024);
  const body = Buffer.from(`{"request_id":"z","inputs":[${input(0, 70 * 1024)},${big}]}`);
  const res = await postBytes(gw.url, body);
  assert.equal(res.status, 422);
  const detail = (JSON.parse(res.body.toString()) as { detail: ValidationIssue[] }).detail;
  assert.equal(detail.length, 2);
  assert.deepEqual(detail[0]!.loc, ['body', 'inputs', 0, 'num_outputs'], 'the small one decoded: its field named');
  assert.equal(detail[1]!.type, 'value_error');
  assert.deepEqual(detail[1]!.loc, ['body', 'inputs', 1]);
  assert.equal(detail[1]!.msg, `Value error, an input of ${Buffer.byteLength(big)} bytes that is not a valid AgentInput`);
});

test('a backend answering megabytes of `[0,0,...]` to an ensemble fails its candidates; the other member and the process go on', async (t) => {
  // 16 MB here for the 100 MB of the report: the answer is refused at its 2 x candidates + 16th element whatever its size.
  const f = useFixtures(t);
  const good = await f.agent({ name: 'good' });
  const flood = zeros(16 * 1024 * 1024).toString('latin1');
  const bad = await f.agent({ name: 'bad', behaviour: { garbage: flood } });
  const shadowBad = await f.agent({ name: 'shadowbad', behaviour: { garbage: flood } });
  const gw = await f.gateway({
    backends: { good: { url: good.url }, bad: { url: bad.url }, shadowbad: { url: shadowBad.url } },
    routes: [{ name: 'd', ensemble: { good: 1, bad: 1 }, shadow: ['shadowbad'] }],
  });
  const res = await gw.post({ request_id: 'ens', inputs: [mkInput(1, { num_outputs: 2 })] });
  assert.equal(res.status, 200);
  const cands = res.json as Cand[];
  assert.equal(cands.length, 2);
  const statuses = cands.map((c) => c.status).sort();
  assert.deepEqual(statuses, ['completed', 'error']);
  const failed = cands.find((c) => c.status === 'error')!;
  assert.equal(failed.error?.code, 'gateway_backend_invalid_response');
  assert.match(failed.error?.message ?? '', /more elements than the candidates asked for/);
  await waitFor('the shadow judged invalid', async () => (await metric(gw, 'magma_gateway_shadow_requests_total{agent="default",route="d",backend="shadowbad",outcome="invalid"}')) === 1);
  assert.equal((await gw.post({ request_id: 'after', inputs: [mkInput(2)] })).status, 200);
});

test('over the budget a second batch waits its turn and a third, past server.admission_timeout_s, gets a 503 with Retry-After', async (t) => {
  const f = useFixtures(t);
  const agent = await gatedAgent(f);
  // 20 KB: one of these 10 KB batches with its objects' estimate (2 KB) fits, two do not.
  const gw = await f.gateway({ server: { memory_budget_mb: 20 / 1024, admission_timeout_s: 1 }, backends: { g: { url: agent.url } }, routes: [{ name: 'd', backend: 'g' }] });
  const first = postBytes(gw.url, batch('first', 10_000));
  await waitFor('the first at the backend', () => agent.seen.length === 1);
  const second = postBytes(gw.url, batch('second', 10_000));
  await waitFor('the second waiting', async () => (await metric(gw, 'magma_gateway_admission_waiting')) === 1);
  agent.gates.shift()!();
  assert.equal((await first).status, 200);
  await waitFor('the second at the backend', () => agent.seen.length === 2);
  // The second holds the budget now; the third waits behind it until its clock runs out.
  const third = await postBytes(gw.url, batch('third', 10_000));
  assert.equal(third.status, 503);
  assert.equal(third.headers['retry-after'], '5');
  const body = JSON.parse(third.body.toString()) as { code: string; detail: string };
  assert.equal(body.code, 'GATEWAY_ERR_MEMORY_BUDGET');
  assert.match(body.detail, /server\.admission_timeout_s \(1 s\)/);
  assert.equal(await metric(gw, 'magma_gateway_admission_timeouts_total'), 1);
  agent.gates.shift()!();
  assert.equal((await second).status, 200, 'the one that waited was served');
  assert.deepEqual(agent.seen, ['first', 'second'], 'the one refused never reached the backend');
  await waitFor('everything given back', async () => (await metric(gw, 'magma_gateway_memory_budget_held_bytes')) === 0);
});

test('connections that send headers for a 60 MB body and nothing more hold no budget: a small batch goes straight through', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent();
  const gw = await f.gateway({ server: { memory_budget_mb: 64, body_limit_mb: 100 }, backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const port = Number(new URL(gw.url).port);
  const silent: Socket[] = [];
  f.defer(() => silent.forEach((s) => s.destroy()));
  for (let i = 0; i < 8; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.write(`POST /v1/responses HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${60 * 1024 * 1024}\r\n\r\n`);
    silent.push(s);
  }
  const open = (): Promise<number> => new Promise((resolve, reject) => gw.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  await waitFor('8 connections open', async () => (await open()) >= 8);
  const res = await gw.post({ request_id: 'small', inputs: [mkInput(1)] });
  assert.equal(res.status, 200);
  assert.equal(await metric(gw, 'magma_gateway_admission_waiting'), 0, 'it never waited');
  assert.equal(await metric(gw, 'magma_gateway_memory_budget_held_bytes'), 0, 'the silent ones hold nothing');
});

test('a batch with a query string and a chunked batch are counted and wait like any other', async (t) => {
  const f = useFixtures(t);
  const agent = await gatedAgent(f);
  // 20 KB as above; a chunked body reserves what it may grow to (here the whole budget) until its end.
  const gw = await f.gateway({ server: { memory_budget_mb: 20 / 1024 }, backends: { g: { url: agent.url } }, routes: [{ name: 'd', backend: 'g' }] });
  const first = postBytes(gw.url, batch('query', 10_000), { path: '/v1/responses?x' });
  await waitFor('the ?x batch at the backend', () => agent.seen.length === 1);
  assert.ok((await metric(gw, 'magma_gateway_memory_budget_held_bytes')) > 10_000, 'its body is counted');
  const chunked = postBytes(gw.url, batch('chunked', 10_000), { chunked: true });
  await waitFor('the chunked batch waiting', async () => (await metric(gw, 'magma_gateway_admission_waiting')) === 1);
  agent.gates.shift()!();
  assert.equal((await first).status, 200);
  await waitFor('the chunked batch at the backend', () => agent.seen.length === 2);
  const held = await metric(gw, 'magma_gateway_memory_budget_held_bytes');
  assert.ok(held > 10_000 && held < 20 * 1024, `the chunked body counted at its size once read, not its reservation: ${held}`);
  agent.gates.shift()!();
  assert.equal((await chunked).status, 200);
  await waitFor('everything given back', async () => (await metric(gw, 'magma_gateway_memory_budget_held_bytes')) === 0);
});

test('a backend answer larger than the whole budget fails that backend\'s candidates, without blaming it', async (t) => {
  // 2 MB against a 1 MB budget: the same decision as a 300 MB answer against a 256 MB one.
  const f = useFixtures(t);
  const big = await f.agent({ name: 'big', behaviour: { candidate: () => ({ output: { say: 's'.repeat(2 * 1024 * 1024), tool_calls: [] } }) } });
  const gw = await f.gateway({ server: { memory_budget_mb: 1 }, backends: { big: { url: big.url } }, routes: [{ name: 'd', backend: 'big' }] });
  for (const id of ['one', 'two', 'three', 'four']) {
    const res = await gw.post({ request_id: id, inputs: [mkInput(1)] });
    assert.equal(res.status, 200);
    const [c] = res.json as Cand[];
    assert.equal(c?.error?.code, 'gateway_memory_budget');
  }
  assert.equal(big.requestsTo('/v1/responses').length, 4, 'never ejected: every batch still went to it');
});

/**
 * An agent answering `num_outputs` candidates, each padded to `pad` bytes, chunked (no declared length, so the
 * answer is charged as it arrives rather than refused at its headers), in one write.
 */
async function chunkedAgent(f: Fixtures, pad: number): Promise<string> {
  const agent = await f.rawAgent((res, body) => {
    const req = JSON.parse(body.toString('utf8')) as { request_id: string; inputs: { id: number; num_outputs: number }[] };
    const cands = req.inputs.flatMap((inp) =>
      Array.from({ length: inp.num_outputs }, (_, i) =>
        JSON.stringify({ request_id: req.request_id, source_id: inp.id, candidate_index: i, status: 'completed', memory: {}, internal_steps: [], output: { say: 's'.repeat(pad), tool_calls: [] }, error: null }),
      ),
    );
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`[${cands.join(',')}]`);
  });
  return agent.url;
}

test('answers paused on a full budget resume when another answer is dropped inside its own read: none waits for its timeout', async (t) => {
  // Answers of 2 MB against a 1 MB budget, no declared length: the oldest reads on and is dropped
  // (gateway_memory_budget) while undici is inside its parser; the room that frees resumes the others, which
  // then fail the same way. Resumed at once from there, undici threw (client-h1 Parser.resume asserts no parser
  // runs): the room's other callbacks were lost and those answers stayed paused until timeout_s.
  const f = useFixtures(t);
  const url = await chunkedAgent(f, 512 * 1024);
  const gw = await f.gateway({ server: { memory_budget_mb: 1 }, backends: { big: { url, timeout_s: 30 } }, routes: [{ name: 'd', backend: 'big' }] });
  const answers = await Promise.all(['c1', 'c2', 'c3', 'c4'].map((id) => gw.post({ request_id: id, inputs: [mkInput(1, { num_outputs: 4 })] })));
  for (const res of answers) {
    assert.equal(res.status, 200);
    assert.deepEqual((res.json as Cand[]).map((c) => c.error?.code), Array(4).fill('gateway_memory_budget'), 'refused for its size, not timed out');
  }
  await waitFor('everything given back', async () => (await metric(gw, 'magma_gateway_memory_budget_held_bytes')) === 0);
});

test('streamed answers waiting for room resume when room comes inside another answer\'s read: every one completes', async (t) => {
  // Forty streamed answers of four 384 KB candidates against a 1 MB budget: each waits for room that another
  // answer's candidates give back, often while undici is inside that answer's parser.
  const f = useFixtures(t);
  const url = await chunkedAgent(f, 384 * 1024);
  const gw = await f.gateway({ server: { memory_budget_mb: 1, stream_answers_over_mb: 0.1 }, backends: { fat: { url, timeout_s: 30 } }, routes: [{ name: 'd', backend: 'fat' }] });
  const ids = Array.from({ length: 40 }, (_, i) => `s${i}`);
  const answers = await Promise.all(ids.map((id) => gw.post({ request_id: id, inputs: [mkInput(1, { num_outputs: 4 })] })));
  for (const res of answers) {
    assert.equal(res.status, 200);
    assert.deepEqual((res.json as Cand[]).map((c) => c.error?.code ?? c.status), Array(4).fill('completed'));
  }
  await waitFor('everything given back', async () => (await metric(gw, 'magma_gateway_memory_budget_held_bytes')) === 0);
});

test('an answer read past an unasked 100 Continue is held to the budget as any answer is', async (t) => {
  const f = useFixtures(t);
  const candidate = (): { output: { say: string; tool_calls: never[] } } => ({ output: { say: 's'.repeat(2 * 1024 * 1024), tool_calls: [] } });
  const big = await f.agent({ name: 'big', behaviour: { interim: 100, candidate } });
  const small = await f.agent({ name: 'small', behaviour: { interim: 100 } });
  const gw = await f.gateway({
    server: { memory_budget_mb: 1 },
    backends: { big: { url: big.url }, small: { url: small.url } },
    routes: [{ name: 's', match: { 'attributes.to': 'small' }, backend: 'small' }, { name: 'd', backend: 'big' }],
  });
  const res = await gw.post({ request_id: 'cont-big', inputs: [mkInput(1)] });
  assert.equal((res.json as Cand[])[0]?.error?.code, 'gateway_memory_budget');
  const ok = await gw.post({ request_id: 'cont-small', inputs: [mkInput(1, { attributes: { to: 'small' } })] });
  assert.equal((ok.json as Cand[])[0]?.status, 'completed', 'a small one read past the 100 completes');
  await waitFor('everything given back', async () => (await metric(gw, 'magma_gateway_memory_budget_held_bytes')) === 0);
});

test('a shadow answer is shed when a batch needs the room, and counted', async (t) => {
  const f = useFixtures(t);
  const prim = await f.agent({ name: 'prim' });
  // The shadow answers 600 KB slowly (one chunk every 20 ms): a 1 MB budget with a batch's answer to hold sheds it.
  const shadow = await f.server((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url !== '/v1/responses') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(req.url === '/health' ? { status: 'ready' } : inferenceOnlyInfo('slow')));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      let n = 0;
      const timer = setInterval(() => {
        if (res.destroyed || n++ >= 60) {
          clearInterval(timer);
          res.end();
          return;
        }
        res.write(Buffer.alloc(10_000, 0x20));
      }, 20);
    });
  });
  const gw = await f.gateway({
    server: { memory_budget_mb: 1 },
    backends: { prim: { url: prim.url }, slow: { url: shadow.url } },
    routes: [{ name: 'd', backend: 'prim', shadow: ['slow'] }],
  });
  assert.equal((await gw.post({ request_id: 'shadowed', inputs: [mkInput(1)] })).status, 200);
  await waitFor('the shadow reading', async () => (await metric(gw, 'magma_gateway_memory_budget_held_bytes')) > 50_000);
  // A 900 KB batch: it must wait for room, and the shadow goes first.
  const res = await postBytes(gw.url, batch('big', 900_000));
  assert.equal(res.status, 200);
  // Two: the first batch's shadow dropped mid-answer, and the big batch's own copy never sent (no room for it).
  assert.equal(await metric(gw, 'magma_gateway_shadows_shed_total'), 2);
  await waitFor('both counted as shed', async () => (await metric(gw, 'magma_gateway_shadow_requests_total{agent="default",route="d",backend="slow",outcome="shed"}')) === 2);
});

test('the event loop stays free while a large body is read: the indexing of 8 MB of numbers runs off it', async (t) => {
  // 8 MB of exponent numbers invalid at its last byte, for the 60 MB of the report: read in place, its indexing
  // alone would hold the loop for hundreds of ms here; on the reader thread the loop never waits 100 ms.
  const f = useFixtures(t);
  const a = await f.agent();
  const gw = await f.gateway({ backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const head = Buffer.from('{"request_id":"big","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"x":[');
  const body = Buffer.concat([head, Buffer.alloc(2 * 1024 * 1024 * 4, '1e5,'), Buffer.from('1e5]}}]x')]);
  // Warm: the reader thread started, and this process's own allocations done before the measure.
  assert.equal((await postBytes(gw.url, body)).status, 422);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const res = await postBytes(gw.url, body);
  delay.disable();
  assert.equal(res.status, 422);
  const detail = (JSON.parse(res.body.toString()) as { detail: ValidationIssue[] }).detail;
  assert.deepEqual(detail.map((d) => d.type), ['json_invalid']);
  assert.equal(detail[0]!.loc[1], body.length - 1, 'at the last byte');
  // What reading it in place costs on this machine now: the loop would be held that long.
  const t0 = performance.now();
  const quiet: Logger = { level: 'info', info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
  readBatch(body, gw.app.gateway.current.config.server, '_gateway', quiet);
  const inPlaceMs = performance.now() - t0;
  // 100 ms, or under a loaded machine (every process here descheduled for tens of ms) half the in-place read.
  const bound = Math.max(100, inPlaceMs / 2);
  assert.ok(delay.max / 1e6 < bound, `the event loop waited ${(delay.max / 1e6).toFixed(0)} ms (bound ${bound.toFixed(0)} ms; in place ${inPlaceMs.toFixed(0)} ms)`);
});

test('the replay store\'s copy of an answer takes room under the budget: without room it is not made and counted, and a retry is computed again', async (t) => {
  const f: Fixtures = useFixtures(t);
  // Two candidates of a ~300 KB say each: the answer is about 600 KB, counted on the batch's hold when its copy
  // for the store is asked for, and the copy as much again.
  const say = 'x'.repeat(300_000);
  const a = await f.agent({ behaviour: { candidate: () => ({ output: { say, tool_calls: [] } }) } });
  const batches = (): number => a.requests.filter((r) => r.path === '/v1/responses').length;
  const run = async (budgetMb: number): Promise<{ computed: number; refused: number }> => {
    const gw = await f.gateway({ server: { memory_budget_mb: budgetMb }, backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
    const before = batches();
    const body = { request_id: `copy-${budgetMb}`, inputs: [mkInput(0, { num_outputs: 2 })] };
    // The second is the client's retry of the first: replayed when the first's answer was stored.
    for (let i = 0; i < 2; i++) {
      const r = await gw.post(body);
      assert.equal(r.status, 200, r.text);
    }
    // A series never incremented is absent: 0.
    const refused = await metric(gw, 'magma_gateway_replay_total{outcome="memory_budget"}');
    return { computed: batches() - before, refused: Number.isNaN(refused) ? 0 : refused };
  };
  assert.deepEqual(await run(1), { computed: 2, refused: 2 });
  assert.deepEqual(await run(64), { computed: 1, refused: 0 });
});
