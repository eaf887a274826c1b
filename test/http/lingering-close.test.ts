/**
 * A 413 a client can read (http/lingering-close.ts): answered as soon as the declared length is over
 * server.body_limit_mb, then the rest of the body read and thrown away within server.body_discard_mb and
 * server.body_discard_s before the connection closes. A client that stops to read and one that sends
 * everything first both see it.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';
import { parseAnswer, sendThenRead } from '../helpers/raw-http.js';

const f = useFixtures();
const MB = 1024 * 1024;

/** A socket to `url` that has sent `head` and `first` body bytes; resolves with what came back once a whole answer did. */
function startSending(url: string, head: string, first: Buffer): { socket: Socket; answer: Promise<ReturnType<typeof parseAnswer>>; closed: Promise<void> } {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  socket.on('error', () => undefined);
  f.defer(() => socket.destroy());
  socket.write(`${head}\r\n\r\n`);
  socket.write(first);
  let raw = '';
  const answer = new Promise<ReturnType<typeof parseAnswer>>((resolve) => {
    socket.on('data', (d: Buffer) => {
      raw += d.toString();
      const a = parseAnswer(raw);
      if (a.status !== 0 && Buffer.byteLength(a.body) >= Number(a.headers['content-length'])) resolve(a);
    });
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, answer, closed };
}

const head = (length: number): string => `POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}`;

test('70 MB against the default 64 MB limit: a client that sends 1 MB and waits reads the 413 before sending the rest', async () => {
  // The documented defaults: body_limit_mb 64, body_discard_mb 256, body_discard_s 30.
  const gw = await f.gateway(oneBackend({ a: 'http://127.0.0.1:1' }));
  const c = startSending(gw.url, head(70 * MB), Buffer.alloc(MB, 0x20));
  const a = await c.answer;
  assert.equal(a.status, 413);
  assert.equal(a.headers.connection, 'close');
  assert.equal((JSON.parse(a.body) as { code: string }).code, 'GATEWAY_ERR_BODY_TOO_LARGE');
  assert.match(a.body, /server\.body_limit_mb \(64 MiB\)/);
  // Still open: the gateway lingers for the rest of the body rather than resetting a client still sending.
  assert.equal(c.socket.destroyed, false);
});

test('70 MB sent whole before reading: the 413 is read, with no reset while sending', async () => {
  const gw = await f.gateway(oneBackend({ a: 'http://127.0.0.1:1' }));
  const body = Buffer.alloc(70 * MB, 0x20);
  const res = await sendThenRead(gw.url, head(body.length), body);
  assert.equal(res.sendError, undefined);
  assert.equal(res.status, 413, res.raw.slice(0, 300));
});

test('the lingering is bounded: past body_discard_mb or body_discard_s the connection closes, the 413 read first', async () => {
  const bySize = await f.gateway(oneBackend({ a: 'http://127.0.0.1:1' }, { server: { body_limit_mb: 1, body_discard_mb: 1, body_discard_s: 600 } }));
  const big = startSending(bySize.url, head(8 * MB), Buffer.alloc(0));
  assert.equal((await big.answer).status, 413);
  // More than body_discard_mb after the answer: the gateway stops reading and closes.
  for (let i = 0; i < 4 && !big.socket.destroyed; i++) big.socket.write(Buffer.alloc(MB, 0x20));
  await big.closed;

  const byTime = await f.gateway(oneBackend({ a: 'http://127.0.0.1:1' }, { server: { body_limit_mb: 1, body_discard_s: 0.2 } }));
  const idle = startSending(byTime.url, head(8 * MB), Buffer.alloc(1000, 0x20));
  assert.equal((await idle.answer).status, 413);
  // Nothing more is sent: the connection closes at body_discard_s, not at the body's end (which never comes).
  await idle.closed;
});

test('a body that ends within the bounds ends the answer, and the connection closes then', async () => {
  const gw = await f.gateway(oneBackend({ a: 'http://127.0.0.1:1' }, { server: { body_limit_mb: 1, body_discard_s: 600 } }));
  const c = startSending(gw.url, head(2 * MB), Buffer.alloc(MB, 0x20));
  assert.equal((await c.answer).status, 413);
  c.socket.write(Buffer.alloc(MB, 0x20));
  await c.closed;
});

/** What comes back first on a socket that has sent `head` and nothing more, once `until` holds for it. */
function readUntil(socket: Socket, until: (raw: string) => boolean): Promise<string> {
  let raw = '';
  return new Promise((resolve) => {
    const onData = (d: Buffer): void => {
      raw += d.toString();
      if (!until(raw)) return;
      socket.off('data', onData);
      resolve(raw);
    };
    socket.on('data', onData);
  });
}

test('`Expect: 100-continue` over the limit: the 413 is the only answer, no `100 Continue` before it', async () => {
  const gw = await f.gateway(oneBackend({ a: 'http://127.0.0.1:1' }));
  const c = startSending(gw.url, `${head(70 * MB)}\r\nexpect: 100-continue`, Buffer.alloc(0));
  const raw = await readUntil(c.socket, (r) => r.includes('\r\n\r\n'));
  assert.match(raw, /^HTTP\/1\.1 413 /, raw.slice(0, 200));
  assert.equal((await c.answer).status, 413);
});

test('`Expect: 100-continue` within the limit: `100 Continue` at once, then the batch answered', async () => {
  const a = await f.agent();
  const gw = await f.gateway(oneBackend({ a: a.url }));
  const body = Buffer.from(JSON.stringify({ request_id: 'expect-1', inputs: [mkInput(1)] }));
  const c = startSending(gw.url, `${head(body.length)}\r\nexpect: 100-continue`, Buffer.alloc(0));
  const first = await readUntil(c.socket, (r) => r.includes('\r\n\r\n'));
  assert.match(first, /^HTTP\/1\.1 100 Continue\r\n\r\n$/);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /^magma_gateway_memory_budget_held_bytes 0$/m, 'no body byte yet: it holds nothing');
  c.socket.write(body);
  const answer = await c.answer;
  assert.equal(answer.status, 200, answer.body);
  assert.equal((JSON.parse(answer.body) as unknown[]).length, 1);
});
