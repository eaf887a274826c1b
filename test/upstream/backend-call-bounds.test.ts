/**
 * callReplica bounds every answer in time (timeout_s covers the whole attempt, not the silence between bytes)
 * and in bytes (max_response_mb): past either the call is aborted at once, the connection closed, and the
 * failure names the config key. Backends here are real loopback servers that misbehave on purpose.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { callReplica } from '../../src/upstream/call-replica.js';
import { postResponses } from '../../src/upstream/post-responses.js';
import { Replica } from '../../src/upstream/replica.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

interface Backend {
  replica: Replica;
  /** Resolves when the server sees its answer's connection closed by the client (the gateway aborted). */
  closed: Promise<void>;
  /** Bytes the server managed to write before the close. */
  written: () => number;
}

async function backendOf(
  answer: (req: IncomingMessage, res: ServerResponse, count: (n: number) => void) => void,
  replicaOpts: { maxResponseBytes?: number; maxJsonDepth?: number } = {},
): Promise<Backend> {
  let written = 0;
  let onClosed!: () => void;
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const server: Server = createServer((req, res) => {
    res.on('close', onClosed);
    req.resume();
    req.on('end', () => answer(req, res, (n) => (written += n)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const replica = new Replica({
    backend: 'b',
    index: 0,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connectTimeoutMs: 1000,
    headers: {},
    ...replicaOpts,
  });
  cleanup.push(async () => {
    await replica.pool.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { replica, closed, written: () => written };
}

/** An answer that never ends: 64 KiB chunks as fast as the socket takes them, until the client goes away. */
const endless = endlessWith(200);

function endlessWith(status: number) {
  return (_req: IncomingMessage, res: ServerResponse, count: (n: number) => void): void => pumpForever(res, status, count);
}

function pumpForever(res: ServerResponse, status: number, count: (n: number) => void): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  const pump = (): void => {
    while (!res.destroyed) {
      count(chunk.length);
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
  };
  res.write('[');
  pump();
}

/** One byte every 150 ms, forever: never silent long enough for an idle timeout. */
function trickle(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const timer = setInterval(() => res.write(' '), 150);
  res.on('close', () => clearInterval(timer));
}

test('a backend trickling one byte every 150 ms fails at timeoutMs, with a message naming timeout_s', async () => {
  const b = await backendOf(trickle);
  const r = await callReplica(b.replica, { method: 'POST', path: '/v1/responses', body: '{}', timeoutMs: 600 });
  assert.equal(r.ok, false);
  assert.equal(r.ok ? undefined : r.failure.code, 'gateway_backend_timeout');
  assert.match(r.ok ? '' : r.failure.message, /within 600 ms \(timeout_s\)/);
  await b.closed; // the call was aborted, not left running
});

test('the timeout key named in the message is the caller\'s (probes name probe_timeout_s)', async () => {
  const b = await backendOf(trickle);
  const r = await callReplica(b.replica, { method: 'GET', path: '/health', timeoutMs: 300, timeoutKey: 'probe_timeout_s' });
  assert.match(r.ok ? '' : r.failure.message, /\(probe_timeout_s\)/);
});

test('an endless chunked answer is cut at maxBytes: invalid_response naming the key, the connection closed', async () => {
  const b = await backendOf(endless, { maxResponseBytes: 1024 * 1024 });
  const r = await callReplica(b.replica, { method: 'POST', path: '/v1/responses', body: '{}', timeoutMs: 60_000 });
  assert.equal(r.ok, false);
  assert.equal(r.ok ? undefined : r.failure.code, 'gateway_backend_invalid_response');
  assert.match(r.ok ? '' : r.failure.message, /larger than 1048576 bytes \(backends\.b\.max_response_mb\)/);
  await b.closed;
  // Aborted at once: the server could not push much more than the bound plus socket buffers.
  assert.ok(b.written() < 64 * 1024 * 1024, `${b.written()} bytes were written`);
});

test('an error status with an endless body is that status\'s failure after 64 KB, the connection closed', async () => {
  const b = await backendOf(endlessWith(500));
  const r = await callReplica(b.replica, { method: 'POST', path: '/v1/responses', body: '{}', timeoutMs: 60_000 });
  assert.equal(r.ok ? undefined : r.failure.code, 'gateway_backend_http_error');
  assert.match(r.ok ? '' : r.failure.message, /^HTTP 500 \(its body passed 65536 bytes and was not read further\)$/);
  await b.closed;
});

test('raw mode (coaching) is bounded the same way, and an explicit maxBytes names its own key', async () => {
  const b = await backendOf(endless);
  const r = await callReplica(b.replica, {
    method: 'POST', path: '/v1/coaching', body: '{}', timeoutMs: 60_000, raw: true, maxBytes: 100_000, maxBytesKey: 'probe_max_response_kb',
  });
  assert.equal(r.ok ? undefined : r.failure.code, 'gateway_backend_invalid_response');
  assert.match(r.ok ? '' : r.failure.message, /larger than 100000 bytes \(probe_max_response_kb\)/);
  await b.closed;
});

test('a declared content-length over the bound fails before the body is read', async () => {
  const b = await backendOf((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) });
    res.write('['); // the rest never comes: only the declared length can fail this call
  });
  const r = await callReplica(b.replica, { method: 'GET', path: '/v1/info', timeoutMs: 60_000, maxBytes: 1024 });
  assert.equal(r.ok ? undefined : r.failure.code, 'gateway_backend_invalid_response');
  await b.closed;
});

test('an answer exactly at the bound is kept whole', async () => {
  const body = '[' + ' '.repeat(1022) + ']';
  const b = await backendOf((_req, res) => res.end(body));
  const r = await callReplica(b.replica, { method: 'GET', path: '/x', timeoutMs: 5000, maxBytes: 1024 });
  assert.ok(r.ok);
  assert.equal(r.text, body);
});

test('postResponses: a 2xx answer comes back as its exact bytes (depth and shape are the answer check\'s); a non-2xx is a failure naming its status', async () => {
  // Nested past any depth bound, not UTF-8 text a decoder would keep: the bytes are the backend's, untouched.
  const deep = Buffer.concat([Buffer.from('['.repeat(40)), Buffer.from([0xff, 0x22]), Buffer.from(']'.repeat(40))]);
  const b = await backendOf((_req, res) => res.end(deep), { maxJsonDepth: 32 });
  const r = await postResponses(b.replica, { body: '{}', headers: {}, timeoutMs: 5000 });
  assert.ok(r.ok);
  assert.deepEqual(r.bytes, deep);
  assert.equal(r.streamed, false);
  const failing = await backendOf((_req, res) => {
    res.statusCode = 503;
    res.end('overloaded, try later');
  });
  const f = await postResponses(failing.replica, { body: '{}', headers: {}, timeoutMs: 5000 });
  assert.equal(f.ok, false);
  assert.equal(f.ok ? undefined : f.status, 503);
  assert.match(f.ok ? '' : f.failure.message, /^HTTP 503: overloaded, try later/);
});
