/**
 * TLS (docs/deployment.md#tls): server.tls serves the agent contract over HTTPS, a plain-HTTP client on that port is
 * refused without harm, a reload puts a new certificate in force for new connections, a backend behind HTTPS is
 * reached with backends.<name>.tls.ca, and server.tls.ca + request_cert require a client certificate.
 * Certificates are made by openssl at test time in a temp dir.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import type { FileGateway } from './helpers/config-file.js';
import { useFixtures } from './helpers/fixtures.js';
import { startFakeAgent, type FakeAgent } from './helpers/fake-agent.js';
import { mkInput } from './helpers/gateway.js';
import { makeCert as makeCertIn, type Pem } from './helpers/certs.js';

const dir = mkdtempSync(join(tmpdir(), 'magma-gw-tls-'));
const makeCert = (name: string): Pem => makeCertIn(dir, name);

function portOf(gw: FileGateway): number {
  const addr = gw.app.server.address();
  assert.ok(typeof addr === 'object' && addr !== null);
  return addr.port;
}

/** The SHA-256 fingerprint of the certificate the server presents on a new connection. */
function peerFingerprint(port: number, opts: ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ...opts }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.once('error', reject);
  });
}

function fingerprintOf(certPath: string): string {
  const out = execFileSync('/usr/bin/openssl', ['x509', '-in', certPath, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' });
  return out.trim().split('=')[1]!;
}

async function get(url: string, dispatcher: Agent): Promise<{ status: number; json: unknown }> {
  const res = await request(url, { dispatcher });
  return { status: res.statusCode, json: await res.body.json() };
}

const baseConfig = (agentUrl: string, tls: Record<string, unknown>, backendTls?: Record<string, unknown>): Record<string, unknown> => ({
  server: { tls },
  probe_interval_s: 60,
  backends: { a: { url: agentUrl, ...(backendTls === undefined ? {} : { tls: backendTls }) } },
  routes: [{ name: 'all', backend: 'a' }],
});

describe('server.tls and backends.<name>.tls', () => {
  let first: Pem;
  let second: Pem;
  let agentPem: Pem;
  let agent: FakeAgent;
  let tlsAgent: FakeAgent;

  before(async () => {
    first = makeCert('first');
    second = makeCert('second');
    agentPem = makeCert('agent');
    agent = await startFakeAgent({ name: 'plain' });
    tlsAgent = await startFakeAgent({
      name: 'secure',
      https: { cert: readFileSync(agentPem.cert), key: readFileSync(agentPem.key) },
    });
  });
  after(async () => {
    await agent.close();
    await tlsAgent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves /health, /v1/info and a batch over HTTPS; plain HTTP on the port fails cleanly', async (t) => {
    const f = useFixtures(t);
    const gw = await f.fileGateway(baseConfig(agent.url, { cert: first.cert, key: first.key }));
    const trust = new Agent({ connect: { ca: readFileSync(first.cert) } });
    f.defer(() => trust.close());
    const base = `https://localhost:${portOf(gw)}`;
    assert.equal((await get(`${base}/health`, trust)).status, 200);
    const info = await get(`${base}/v1/info`, trust);
    assert.equal(info.status, 200);
    assert.equal((info.json as { protocol_version: string }).protocol_version, '2.0');
    const res = await request(`${base}/v1/responses`, {
      dispatcher: trust,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'tls-1', inputs: [mkInput(1)] }),
    });
    assert.equal(res.statusCode, 200);
    const cands = (await res.body.json()) as { status: string; source_id: number }[];
    assert.deepEqual(cands.map((c) => [c.source_id, c.status]), [[1, 'completed']]);

    // A client that speaks plain HTTP to the TLS port: its connection ends, the gateway keeps serving.
    const ended = await new Promise<string>((resolve) => {
      const s = netConnect(portOf(gw), '127.0.0.1', () => s.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n'));
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString('latin1')));
      s.on('error', () => resolve(got));
      s.on('close', () => resolve(got));
    });
    assert.ok(!ended.startsWith('HTTP/1.1 200'), 'no plain-HTTP answer on the TLS port');
    await assert.rejects(request(`http://127.0.0.1:${portOf(gw)}/health`));
    assert.equal((await get(`${base}/health`, trust)).status, 200);
    // An untrusted certificate is refused by a client that checks.
    await assert.rejects(request(`${base}/health`, { dispatcher: new Agent() }));
  });

  it('a reload serves the new certificate on new connections; an unreadable file refuses the reload', async (t) => {
    const f = useFixtures(t);
    const cert = join(dir, 'live-cert.pem');
    const key = join(dir, 'live-key.pem');
    writeFileSync(cert, readFileSync(first.cert));
    writeFileSync(key, readFileSync(first.key));
    const config = baseConfig(agent.url, { cert, key });
    const gw = await f.fileGateway(config);
    const port = portOf(gw);
    assert.equal(await peerFingerprint(port, { ca: readFileSync(first.cert) }), fingerprintOf(first.cert));

    writeFileSync(cert, readFileSync(second.cert));
    writeFileSync(key, readFileSync(second.key));
    const ok = await gw.reload(config);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(await peerFingerprint(port, { ca: readFileSync(second.cert) }), fingerprintOf(second.cert));

    const bad = await gw.reload(baseConfig(agent.url, { cert: join(dir, 'missing.pem'), key }));
    assert.equal(bad.status, 400);
    assert.match(bad.text, /server\.tls\.cert: cannot read .*missing\.pem/);
    // The running certificate keeps serving.
    assert.equal(await peerFingerprint(port, { ca: readFileSync(second.cert) }), fingerprintOf(second.cert));

    // A backend's TLS file is read on reload too: unreadable, the reload is refused naming its key.
    const badBackend = await gw.reload(baseConfig(agent.url, { cert, key }, { ca: join(dir, 'no-ca.pem') }));
    assert.equal(badBackend.status, 400);
    assert.match(badBackend.text, /backends\.a\.tls\.ca: cannot read .*no-ca\.pem/);
  });

  it('reaches a backend behind HTTPS with backends.<name>.tls.ca, and not without it', async (t) => {
    const f = useFixtures(t);
    const trusted = await f.fileGateway(
      baseConfig(tlsAgent.url.replace('127.0.0.1', 'localhost'), { cert: first.cert, key: first.key }, { ca: agentPem.cert }),
    );
    const trust = new Agent({ connect: { ca: readFileSync(first.cert) } });
    f.defer(() => trust.close());
    const base = `https://localhost:${portOf(trusted)}`;
    assert.equal((await get(`${base}/health`, trust)).status, 200);
    const res = await request(`${base}/v1/responses`, {
      dispatcher: trust,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'tls-2', inputs: [mkInput(7)] }),
    });
    const cands = (await res.body.json()) as { status: string; output: { say: string } | null }[];
    assert.equal(cands[0]?.status, 'completed');
    assert.ok(tlsAgent.requestsTo('/v1/responses').length >= 1);
    // Without the CA the agent's certificate is not trusted: not ready, and the batch gets error candidates.
    const untrusted = await f.fileGateway(baseConfig(tlsAgent.url, { cert: first.cert, key: first.key }));
    assert.equal((await get(`https://localhost:${portOf(untrusted)}/health`, trust)).status, 503);
  });

  it('requires a client certificate with server.tls.ca and request_cert', async (t) => {
    const f = useFixtures(t);
    const client = makeCert('client');
    const gw = await f.fileGateway(
      baseConfig(agent.url, { cert: first.cert, key: first.key, ca: client.cert, request_cert: true }),
    );
    const withCert = new Agent({
      connect: { ca: readFileSync(first.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) },
    });
    const without = new Agent({ connect: { ca: readFileSync(first.cert) } });
    const other = new Agent({
      connect: { ca: readFileSync(first.cert), cert: readFileSync(second.cert), key: readFileSync(second.key) },
    });
    f.defer(() => Promise.all([withCert.close(), without.close(), other.close()]));
    const base = `https://localhost:${portOf(gw)}`;
    assert.equal((await get(`${base}/health`, withCert)).status, 200);
    await assert.rejects(get(`${base}/health`, without));
    await assert.rejects(get(`${base}/health`, other));
  });

  it('refuses request_cert without ca, and a key that is not the certificate\'s, naming the key', async (t) => {
    const f = useFixtures(t);
    await assert.rejects(f.fileGateway(baseConfig(agent.url, { cert: first.cert, key: first.key, request_cert: true })), /request_cert needs "ca"/);
    await assert.rejects(f.fileGateway(baseConfig(agent.url, { cert: first.cert, key: second.key })), /server\.tls: the certificate, key or CA files are not usable/);
  });
});
