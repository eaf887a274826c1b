/**
 * callReplica collects a backend's answer through undici's dispatch handler (upstream/backend-call.ts): the text
 * must come out as undici's body.text() would give it, and the batch's signal must cancel a call in any state.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { BatchSignal } from '../../src/abort.js';
import { callReplica } from '../../src/upstream/call-replica.js';
import { Replica } from '../../src/upstream/replica.js';
import { waitFor } from '../helpers/wait.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** A loopback server answering every request with `answer`, and a replica pointing at it. */
async function replicaOf(answer: (res: ServerResponse) => void): Promise<Replica> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const replica = new Replica({
    backend: 'b',
    index: 0,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connectTimeoutMs: 1000,
    headers: {},
  });
  cleanup.push(async () => {
    await replica.pool.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return replica;
}

test('an answer in many chunks, a multi-byte character split between two, decodes whole', async () => {
  const text = JSON.stringify({ say: 'é'.repeat(50_000) + '→ done' });
  const bytes = Buffer.from(text, 'utf8');
  const replica = await replicaOf((res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    // Cut at odd offsets: 'é' is two bytes, so every cut falls inside a character.
    for (let at = 0; at < bytes.length; at += 4097) res.write(bytes.subarray(at, Math.min(at + 4097, bytes.length)));
    res.end();
  });
  const r = await callReplica(replica, { method: 'POST', path: '/v1/responses', body: '{}', timeoutMs: 5000 });
  assert.ok(r.ok);
  assert.equal(r.status, 200);
  assert.equal(r.text, text);
});

test('a leading UTF-8 byte order mark is dropped, as undici body.text() does', async () => {
  const replica = await replicaOf((res) => {
    res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[]')]));
  });
  const r = await callReplica(replica, { method: 'GET', path: '/x', timeoutMs: 5000 });
  assert.ok(r.ok);
  assert.equal(r.text, '[]');
});

test('raw mode keeps the bytes and the content type untouched', async () => {
  const payload = Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d, 0xff]);
  const replica = await replicaOf((res) => {
    res.writeHead(409, { 'Content-Type': 'application/problem+json' });
    res.end(payload);
  });
  const r = await callReplica(replica, { method: 'POST', path: '/c', body: '{}', timeoutMs: 5000, raw: true });
  assert.ok(r.ok);
  assert.equal(r.status, 409);
  assert.equal(r.contentType, 'application/problem+json');
  assert.deepEqual(r.bytes, payload);
});

test('the batch signal cancels a call waiting for its answer, as a timeout', async () => {
  const signal = new BatchSignal();
  const replica = await replicaOf(() => signal.abort()); // never answers; the batch is cancelled once it waits
  const call = callReplica(replica, { method: 'GET', path: '/slow', timeoutMs: 60_000, signal });
  const r = await call;
  assert.equal(r.ok, false);
  assert.equal(r.ok ? undefined : r.failure.code, 'gateway_backend_timeout');
});

test('a call made with an already aborted signal fails at once without reaching the backend', async () => {
  let reached = 0;
  const replica = await replicaOf((res) => {
    reached++;
    res.end('[]');
  });
  const signal = new BatchSignal();
  signal.abort();
  const r = await callReplica(replica, { method: 'GET', path: '/x', timeoutMs: 5000, signal });
  assert.equal(r.ok, false);
  assert.equal(reached, 0);
});

test('a signal aborted while the call waits in the pool queue answers at once and never sends it', async () => {
  const held: { end: (body: string) => void }[] = [];
  const replica = await replicaOf((res) => {
    held.push(res);
  });
  // 64 connections per replica: the 65th call waits in undici's queue.
  const busy = Array.from({ length: 64 }, () => callReplica(replica, { method: 'GET', path: '/busy', timeoutMs: 5000 }));
  await waitFor('every connection busy', () => held.length === 64);
  const signal = new BatchSignal();
  const queued = callReplica(replica, { method: 'GET', path: '/queued', timeoutMs: 5000, signal });
  signal.abort();
  const r = await queued;
  assert.equal(r.ok, false, 'answered while every connection is still busy');
  for (const res of held) res.end('[]');
  const done = await Promise.all(busy);
  assert.ok(done.every((d) => d.ok));
  assert.equal(held.length, 64, 'the queued call was never sent');
});
