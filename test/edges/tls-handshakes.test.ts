/**
 * TLS handshakes bounded (docs/limits-and-edges.md#tls-handshakes): a connection in its handshake takes a
 * connection slot (evicted first) and is closed after server.tls_handshake_timeout_s, so clients that open TLS
 * and never finish the handshake neither starve new clients nor the admin listener.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Agent, request } from 'undici';
import { makeCert } from '../helpers/certs.js';
import { startGatewayFromFile } from '../helpers/config-file.js';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'magma-gw-tls-edges-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const f = useFixtures();
const pem = makeCert(dir, 'server');

function halfOpen(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

test('300 half-open TLS handshakes at max_connections 32: new TLS clients and the admin listener are served', async () => {
  const agent = await f.agent({ name: 'a' });
  const gw = await startGatewayFromFile({
    server: { port: 0, max_connections: 32, tls_handshake_timeout_s: 60, tls: { cert: pem.cert, key: pem.key } },
    backends: { a: { url: agent.url } },
    routes: [{ name: 'd', backend: 'a' }],
  });
  f.defer(() => gw.close());
  const port = Number(new URL(gw.url).port);
  const sockets: Socket[] = [];
  f.defer(() => sockets.forEach((s) => s.destroy()));
  let closed = 0;
  for (let i = 0; i < 300; i++) {
    const s = await halfOpen(port);
    s.on('error', () => undefined).on('close', () => closed++);
    sockets.push(s);
  }
  const tls = new Agent({ connect: { ca: readFileSync(pem.cert), servername: 'localhost' } });
  f.defer(() => tls.close());
  const res = await request(`https://127.0.0.1:${port}/v1/responses`, {
    method: 'POST',
    dispatcher: tls,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: 'r', inputs: [mkInput(1)] }),
  });
  assert.equal(res.statusCode, 200);
  assert.equal(((await res.body.json()) as { status: string }[])[0]!.status, 'completed');
  const admin = await gw.admin('/gateway/backends');
  assert.equal(admin.status, 200);
  // The oldest handshakes were closed to make room: at most the cap stays open.
  await waitFor('the half-open connections over the cap closed', () => closed >= 300 - 32);
});

test('a handshake not finished within server.tls_handshake_timeout_s is closed', async () => {
  const gw = await startGatewayFromFile({
    server: { port: 0, tls_handshake_timeout_s: 0.3, tls: { cert: pem.cert, key: pem.key } },
    backends: { a: { url: 'http://127.0.0.1:1' } },
    routes: [{ name: 'd', backend: 'a' }],
  });
  f.defer(() => gw.close());
  const s = await halfOpen(Number(new URL(gw.url).port));
  const t0 = Date.now();
  await new Promise<void>((resolve) => s.on('error', () => undefined).once('close', () => resolve()));
  const ms = Date.now() - t0;
  assert.ok(ms >= 250, `closed after ${ms} ms, not before the timeout`);
});
