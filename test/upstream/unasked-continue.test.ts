/**
 * A backend that writes `HTTP/1.1 100 Continue` (never asked: the gateway sends no `Expect`) before its 200
 * (docs/limits-and-edges.md#1xx-answers-from-backends): undici ends that connection, so the gateway asks once
 * more through node:http, which reads past the 100; the candidate completes and the replica is not ejected. The
 * backend is a raw TCP server writing those bytes itself, one answer per connection.
 */
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { test } from 'node:test';
import type { BackendView } from '../../src/admin/views.js';
import { http } from '../helpers/config-file.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import type { Cand } from '../helpers/gateway.js';

const f = useFixtures();

const INFO = JSON.stringify({
  agent_id: 'raw', agent_version: '1', protocol_version: '2.0', contract_version: '2.0',
  capabilities: { inference: true, coaching: false },
});

/** A raw HTTP/1.1 backend; `continueFirst(n)` says whether its n-th POST (from 0) gets a 100 Continue first. */
async function rawBackend(continueFirst: (n: number) => boolean): Promise<{ url: string; posts: () => number }> {
  let posts = 0;
  const answer = (socket: Socket, head: string, body: string): void => {
    const [line] = head.split('\r\n');
    const path = line?.split(' ')[1] ?? '';
    let text = '{"status":"ready"}';
    let interim = '';
    if (path === '/v1/info') text = INFO;
    if (path === '/v1/responses') {
      const req = JSON.parse(body) as { request_id: string; inputs: { id: number }[] };
      text = JSON.stringify(req.inputs.map((inp) => ({ request_id: req.request_id, source_id: inp.id, candidate_index: 0, status: 'completed', memory: {}, internal_steps: [], output: { say: 'hi', tool_calls: [] }, error: null })));
      if (continueFirst(posts++)) interim = 'HTTP/1.1 100 Continue\r\n\r\n';
    }
    socket.end(`${interim}HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  };
  const server = createServer((socket) => {
    let buf = Buffer.alloc(0);
    socket.on('error', () => undefined); // undici resets the connection after the 100
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      answer(socket, head, buf.subarray(end + 4, end + 4 + length).toString('utf8'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  f.defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const addr = server.address();
  return { url: `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`, posts: () => posts };
}

const BODY = '{"request_id":"c1","inputs":[{"id":1,"instruction":{"type":"user","content":"x"}}]}';

async function replicaOf(adminUrl: string): Promise<BackendView['replicas'][number] | undefined> {
  const res = await http(`${adminUrl}/gateway/backends`);
  return (res.json as { backends: BackendView[] }).backends.find((b) => b.name === 'raw')?.replicas[0];
}

test('a 100 Continue before the first answer only: asked again on a new connection, the batch completes', async () => {
  const backend = await rawBackend((n) => n === 0);
  const gw = await f.gateway(oneBackend({ raw: { url: backend.url, eject_after_failures: 1 } }));
  const res = await gw.post(BODY);
  assert.equal(res.status, 200, res.text);
  const [c] = res.json as Cand[];
  assert.equal(c?.status, 'completed', res.text);
  assert.equal(backend.posts(), 2);
  assert.equal((await replicaOf(gw.adminUrl))?.consecutive_failures, 0);
});

test('a 100 Continue before every answer: read past on the second try, every candidate completes, the replica is not ejected', async () => {
  const backend = await rawBackend(() => true);
  const gw = await f.gateway(oneBackend({ raw: { url: backend.url, eject_after_failures: 1 } }));
  for (const id of ['c2', 'c3', 'c4']) {
    const res = await gw.post(BODY.replace('"c1"', `"${id}"`));
    assert.equal(res.status, 200, res.text);
    const [c] = res.json as Cand[];
    assert.equal(c?.status, 'completed', res.text);
    assert.equal(c?.request_id, id, res.text);
  }
  // Each batch: the first try (undici, ended at the 100) and the one read past it.
  assert.equal(backend.posts(), 6);
  const replica = await replicaOf(gw.adminUrl);
  assert.equal(replica?.state, 'ready');
  assert.equal(replica?.consecutive_failures, 0);
});
