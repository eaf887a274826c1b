/**
 * The server's receive bounds (docs/configuration.md#limits-and-timeouts) with real sockets: a request whose headers or
 * body trickle in is answered 408 with a JSON detail naming the key and its connection closed; trickling
 * connections held open do not keep normal batches from being served; at max_connections a new connection
 * takes the slot of the oldest idle one, and is closed only when every connection is serving a batch; bytes over memory_budget_mb make new batches wait in order, and a waiting
 * client that leaves frees its place.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { startAgentServer } from '../../demo/agents/agent-server.js';
import { waitFor } from '../helpers/wait.js';
import type { FakeAgent } from '../helpers/fake-agent.js';
import { oneBackend, useFixtures, type Fixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';

async function setup(f: Fixtures, server: Record<string, unknown>): Promise<{ a: FakeAgent; gw: TestGateway; port: number }> {
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(oneBackend({ a }, { server }));
  return { a, gw, port: Number(new URL(gw.url).port) };
}

interface Trickler {
  socket: Socket;
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<string>;
  stop(): void;
}

/** Connect, send `head` at once, then one byte of `rest` every `everyMs` for as long as the socket is open. */
function trickle(port: number, head: string, rest: string, everyMs = 100): Trickler {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => undefined);
  let i = 0;
  const timer = setInterval(() => {
    if (i < rest.length && socket.writable) socket.write(rest[i++]!);
  }, everyMs);
  socket.write(head);
  const closed = new Promise<string>((resolve) =>
    socket.on('close', () => {
      clearInterval(timer);
      resolve(received);
    }),
  );
  return {
    socket,
    closed,
    stop: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

function parseAnswer(raw: string): { status: number; headers: string; body: unknown } {
  const sep = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, sep);
  return { status: Number(headers.split(' ')[1]), headers: headers.toLowerCase(), body: JSON.parse(raw.slice(sep + 4)) };
}

const batchJson = JSON.stringify({ request_id: 'slow', inputs: [mkInput(1)] });

test('headers trickled past server.headers_timeout_s: 408 with a JSON detail naming the key, then close', async (t) => {
  const f = useFixtures(t);
  const { a, port } = await setup(f, { headers_timeout_s: 0.4 });
  const slow = trickle(port, 'POST /v1/responses HTTP/1.1\r\nHost: x\r\n', 'x-slow: ' + 'a'.repeat(1000));
  const answer = parseAnswer(await slow.closed);
  assert.equal(answer.status, 408);
  assert.match(answer.headers, /content-type: application\/json/);
  assert.match(answer.headers, /connection: close/);
  assert.match((answer.body as { detail: string }).detail, /server\.headers_timeout_s \(0\.4 s\)/);
  assert.equal(a.requestsTo('/v1/responses').length, 0);
});

test('a body trickled past server.body_timeout_s: 408 with a JSON detail naming the key, then close', async (t) => {
  const f = useFixtures(t);
  const { a, gw, port } = await setup(f, { body_timeout_s: 0.4 });
  const head = `POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${batchJson.length}\r\n\r\n`;
  const slow = trickle(port, head, batchJson);
  const answer = parseAnswer(await slow.closed);
  assert.equal(answer.status, 408);
  assert.match(answer.headers, /connection: close/);
  assert.match((answer.body as { detail: string }).detail, /server\.body_timeout_s \(0\.4 s\)/);
  assert.equal(a.requestsTo('/v1/responses').length, 0);
  // Other paths are bounded the same way (their bodies are read by fastify).
  const other = trickle(port, `PUT /v1/coaching/sessions/r1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n`, 'x'.repeat(100));
  assert.equal(parseAnswer(await other.closed).status, 408);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /magma_gateway_http_requests_total\{endpoint="\/v1\/responses",status_code="408",client="anonymous"\} 1/);
});

test('a body that keeps arriving within server.body_timeout_s is served', async (t) => {
  const f = useFixtures(t);
  const { port } = await setup(f, { body_timeout_s: 10 });
  const body = JSON.stringify({ request_id: 'chunks', inputs: [mkInput(1, { memory: { blob: 'y'.repeat(200_000) } })] });
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  const done = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.write(`POST /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
  const step = Math.ceil(body.length / 10);
  for (let i = 0; i < body.length; i += step) {
    // A slow client, the behaviour under test: ten pieces, each sent 20 ms after the previous one was written out.
    await new Promise<void>((resolve) => socket.write(body.slice(i, i + step), () => setTimeout(resolve, 20)));
  }
  await done;
  assert.equal(Number(received.split(' ')[1]), 200);
  const cands = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) as Cand[];
  assert.equal(cands[0]!.status, 'completed');
});

test('trickling connections held open do not keep normal batches from being served', async (t) => {
  const f = useFixtures(t);
  const { gw, port } = await setup(f, { body_timeout_s: 120, headers_timeout_s: 120, max_connections: 100 });
  const head = `POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: ${batchJson.length}\r\n\r\n`;
  const tricklers = Array.from({ length: 40 }, (_, i) =>
    i % 2 === 0 ? trickle(port, head, batchJson, 200) : trickle(port, 'POST /v1/responses HTTP/1.1\r\n', 'x-a: b\r\n', 200),
  );
  f.defer(() => tricklers.forEach((c) => c.stop()));
  await waitFor('the trickling connections open', async () => (await connections(gw)) >= 40);
  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => gw.post({ request_id: `n${i}`, inputs: [mkInput(i)] })));
  assert.deepEqual(answers.map((r) => r.status), Array(30).fill(200));
  assert.ok(tricklers.every((c) => !c.socket.destroyed), 'the tricklers are still connected');
});

function connections(gw: TestGateway): Promise<number> {
  return new Promise((resolve, reject) => gw.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

test('at server.max_connections a new connection takes the slot of the oldest idle or trickling one', async (t) => {
  const f = useFixtures(t);
  const { gw, port } = await setup(f, { max_connections: 3, headers_timeout_s: 120, body_timeout_s: 120 });
  const head = `POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: ${batchJson.length}\r\n\r\n`;
  const oldest = trickle(port, 'POST /v1/responses HTTP/1.1\r\n', 'x-a: ' + 'b'.repeat(1000), 200);
  f.defer(() => oldest.stop());
  await waitFor('the first connection open', async () => (await connections(gw)) === 1);
  const body = trickle(port, head, batchJson, 200);
  const headers = trickle(port, 'POST /v1/responses HTTP/1.1\r\n', 'x-a: ' + 'b'.repeat(1000), 200);
  f.defer(() => [body, headers].forEach((c) => c.stop()));
  await waitFor('3 connections held', async () => (await connections(gw)) === 3);
  // A fourth connection (a normal batch) closes the oldest connection that holds no work, and is served.
  assert.equal((await gw.post({ request_id: 'in', inputs: [mkInput(1)] })).status, 200);
  assert.equal(await oldest.closed, '', 'the oldest idle connection was closed without an answer');
  assert.ok(!body.socket.destroyed && !headers.socket.destroyed, 'the newer ones keep their slots');
});

/**
 * A gateway on a real agent that holds each batch until the test releases it, one at a time (`gates`) or all
 * from then on (`open`); `seen` lists the request ids the agent received, in order.
 */
async function gatedGateway(
  f: Fixtures,
  server: Record<string, unknown>,
): Promise<{ gw: TestGateway; gates: (() => void)[]; seen: string[]; open(): void }> {
  const gates: (() => void)[] = [];
  const seen: string[] = [];
  let released = false;
  const agent = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async (_input, ctx) => {
      seen.push(ctx.requestId);
      if (!released) await new Promise<void>((resolve) => gates.push(resolve));
      return { say: 'done' };
    },
  });
  f.defer(() => agent.close());
  const gw = await f.gateway(oneBackend({ g: agent }, { server }));
  const open = (): void => {
    released = true;
    for (const g of gates.splice(0)) g();
  };
  return { gw, gates, seen, open };
}

test('at server.max_connections with every connection serving a batch, a new connection is closed at once', async (t) => {
  const f = useFixtures(t);
  const { gw, gates, open } = await gatedGateway(f, { max_connections: 2 });
  const port = Number(new URL(gw.url).port);
  const held = [0, 1].map((i) => gw.post({ request_id: `held${i}`, inputs: [mkInput(i)] }));
  await waitFor('both batches at the agent', () => gates.length === 2);
  const extra = trickle(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n', '');
  assert.equal(await extra.closed, '', 'closed without an answer: no slot holds work that could be given up');
  open();
  assert.deepEqual((await Promise.all(held)).map((r) => r.status), [200, 200], 'the batches being served were never cut');
  assert.equal((await gw.post({ request_id: 'after', inputs: [mkInput(3)] })).status, 200, 'a freed slot serves again');
});

test('100 connections that send nothing do not keep normal batches out of a 16-connection gateway', async (t) => {
  const f = useFixtures(t);
  const { gw, port } = await setup(f, { max_connections: 16, headers_timeout_s: 120, body_timeout_s: 120 });
  const silent = Array.from({ length: 100 }, () => trickle(port, '', ''));
  f.defer(() => silent.forEach((c) => c.stop()));
  let closed = 0;
  for (const c of silent) void c.closed.then(() => closed++);
  // Each connection past the 16th took the slot of an older silent one.
  await waitFor('84 silent connections closed to make room', () => closed === 84);
  assert.ok((await connections(gw)) <= 16);
  const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => gw.post({ request_id: `s${i}`, inputs: [mkInput(i)] })));
  assert.deepEqual(answers.map((r) => r.status), Array(30).fill(200));
});

test('over server.memory_budget_mb new batches wait in order; one that leaves frees its place', async (t) => {
  const f = useFixtures(t);
  // About 3.6 KB: one of these batches (a 1 KB body, its objects' estimate of 2 KB, src/memory/estimates.ts)
  // leaves no room for a second body, and its answer (about 1 KB) still fits in the whole budget.
  const { gw, gates, seen } = await gatedGateway(f, { memory_budget_mb: 0.0035 });
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(name + ' '));
    return Number(line?.slice(name.length + 1));
  };
  const body = (id: string): string => JSON.stringify({ request_id: id, inputs: [mkInput(1, { memory: { pad: 'p'.repeat(900) } })] });

  const first = gw.post(body('first'));
  await waitFor('the first batch at the backend', () => seen.length === 1);
  assert.ok((await metric('magma_gateway_memory_budget_held_bytes')) > 900);
  const leaver = new AbortController();
  const leaving = fetch(`${gw.url}/v1/responses`, { method: 'POST', body: body('leaver'), signal: leaver.signal }).catch((e: unknown) => e);
  await waitFor('one batch waiting', async () => (await metric('magma_gateway_admission_waiting')) === 1);
  const second = gw.post(body('second'));
  await waitFor('two batches waiting', async () => (await metric('magma_gateway_admission_waiting')) === 2);
  leaver.abort();
  await leaving;
  await waitFor('the one that left no longer waits', async () => (await metric('magma_gateway_admission_waiting')) === 1);
  assert.deepEqual(seen, ['first'], 'nothing after the first reached the backend while it held the budget');

  gates.shift()!();
  assert.equal((await first).status, 200);
  await waitFor('the second batch at the backend', () => seen.length === 2);
  gates.shift()!();
  const res = await second;
  assert.equal(res.status, 200, 'waited, not refused');
  assert.equal((res.json as Cand[])[0]!.status, 'completed');
  assert.deepEqual(seen, ['first', 'second'], 'the batch whose client left was never computed');
  assert.equal(await metric('magma_gateway_admission_wait_seconds_count'), 1);
  assert.equal(await metric('magma_gateway_memory_budget_held_bytes'), 0);
});

test('a reload changes the receive bounds from the next request on', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.fileGateway(oneBackend({ a }, { server: { headers_timeout_s: 600 } }));
  assert.equal((await gw.reload(oneBackend({ a }, { server: { headers_timeout_s: 0.4 } }))).status, 200);
  assert.equal((await gw.call('/health')).status, 200);
  const slow = trickle(Number(new URL(gw.url).port), 'POST /v1/responses HTTP/1.1\r\nHost: x\r\n', 'x-slow: ' + 'a'.repeat(1000));
  const answer = parseAnswer(await slow.closed);
  assert.equal(answer.status, 408);
  assert.match((answer.body as { detail: string }).detail, /server\.headers_timeout_s \(0\.4 s\)/);
});
