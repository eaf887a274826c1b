/**
 * Hot reload (docs/operations.md#hot-reload) of a gateway started from a file, against real loopback
 * agents: under load no batch
 * fails or goes missing, batches in flight finish on the old config, removed replicas' pools close once they
 * drain; an invalid file is refused with its reason while the old config keeps serving; restart-only settings
 * are kept and reported; SIGHUP reloads the running CLI.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import type { GatewayRuntime } from '../src/runtime.js';
import { configFile, http, startGatewayFromFile, type FileGateway } from './helpers/config-file.js';
import { waitFor } from './helpers/wait.js';
import { startFakeAgent, type FakeAgent } from './helpers/fake-agent.js';
import { mkInput, type Cand } from './helpers/gateway.js';
import { oneBackend } from './helpers/fixtures.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function agent(name: string): Promise<FakeAgent> {
  const a = await startFakeAgent({ name, behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 20 } : {}) });
  cleanup.push(() => a.close());
  return a;
}

async function gateway(config: Record<string, unknown>): Promise<FileGateway> {
  const gw = await startGatewayFromFile(config);
  cleanup.push(() => gw.close());
  return gw;
}

const single = (url: string | string[]): Record<string, unknown> => (oneBackend({ svc: Array.isArray(url) ? { urls: url } : { url } }, { probe_interval_s: 0.1 }));

/** Post a batch of 3 inputs; returns who served each candidate, or a description of what went wrong. */
async function batch(gw: FileGateway, id: string): Promise<string[] | string> {
  const res = await gw.post({ request_id: id, inputs: [mkInput(1), mkInput(2, { num_outputs: 2 }), mkInput(3)] });
  if (res.status !== 200) return `${id}: HTTP ${res.status} ${res.text}`;
  const cands = res.json as Cand[];
  if (cands.length !== 4) return `${id}: ${cands.length} candidates`;
  const bad = cands.find((c) => c.status !== 'completed');
  return bad === undefined ? cands.map((c) => String(c.memory.seen_by)) : `${id}: ${JSON.stringify(bad.error)}`;
}

const poolsClosed = (rt: GatewayRuntime): boolean => rt.upstreams.all().every((r) => r.pool.closed);

test('reload under load: no failed or lost batch, in-flight batches finish on the old config, old pools drain', async () => {
  const [old, n1, n2] = [await agent('old'), await agent('n1'), await agent('n2')];
  old.setBehaviour((r) => (r.path !== '/v1/responses' ? {} : { delayMs: (r.body as { request_id?: string })?.request_id === 'slow' ? 700 : 20 }));
  const gw = await gateway(single(old.url));
  const first = gw.app.gateway.current;

  let stop = false;
  const results: (string[] | string)[] = [];
  const sent: number[] = [0];
  const loops = Array.from({ length: 4 }, async (_, k) => {
    for (let i = 0; !stop; i++) {
      sent[0]!++;
      results.push(await batch(gw, `load-${k}-${i}`));
    }
  });
  const slow = batch(gw, 'slow');
  await waitFor('the slow batch at the old backend', () =>
    old.requestsTo('/v1/responses').some((r) => (r.body as { request_id?: string } | undefined)?.request_id === 'slow'),
  );

  const res = await gw.reload(single([n1.url, n2.url]));
  assert.equal(res.status, 200, res.text);
  const report = res.json as { reloaded: boolean; backends: { changed: string[] }; restart_required: string[] };
  assert.deepEqual([report.reloaded, report.backends.changed, report.restart_required], [true, ['svc'], []]);
  assert.notEqual(gw.app.gateway.current, first);
  assert.equal(poolsClosed(first), false, 'the old pool stays open while its slow batch is in flight');
  assert.deepEqual(await slow, ['old', 'old', 'old', 'old'], 'the in-flight batch finished on the old config');
  await waitFor('the old pools closed after draining', () => poolsClosed(first));
  const after1 = await batch(gw, 'after-reload');
  assert.ok(Array.isArray(after1) && after1.every((s) => s === 'n1' || s === 'n2'), String(after1));

  // Reload back and forth while the load continues; three at once are serialized.
  const runtimes = [first];
  for (let i = 0; i < 6; i++) {
    const r = await gw.reload(single(i % 2 === 0 ? old.url : [n1.url, n2.url]));
    assert.equal(r.status, 200, r.text);
    runtimes.push(gw.app.gateway.current);
    const answered = results.length;
    await waitFor('a batch answered on this config', () => results.length > answered);
  }
  const together = await Promise.all([gw.reload(), gw.reload(), gw.reload()]);
  assert.deepEqual(together.map((r) => r.status), [200, 200, 200]);
  stop = true;
  await Promise.all(loops);

  const failures = results.filter((r) => typeof r === 'string');
  assert.deepEqual(failures, [], 'no batch failed');
  assert.equal(results.length, sent[0], 'every batch sent was answered');
  assert.ok(results.length > 40, `enough load to matter (${results.length} batches)`);
  await waitFor('every replaced runtime drained', () => runtimes.slice(0, -1).every(poolsClosed));
  const metrics = (await gw.call('/metrics')).text;
  assert.match(metrics, /magma_gateway_config_reloads_total\{result="ok"\} 10/);
});

test('an invalid file is refused with the reason and the old config keeps serving', async () => {
  const a = await agent('a');
  const gw = await gateway(single(a.url));
  const before = (await gw.admin('/gateway/config')).text;

  gw.file.writeText('probe_interval_s: 0.1\nbackends:\n  svc: { url: "http://127.0.0.1:1" }\nroutes:\n  - name: default\n    backend: nope\n');
  const bad = await gw.admin('/gateway/reload', { method: 'POST' });
  assert.equal(bad.status, 400);
  const { reloaded, detail } = bad.json as { reloaded: boolean; detail: string };
  assert.equal(reloaded, false);
  assert.match(detail, /gateway\.yaml:6:\d+: routes\[0\]\.backend: .*nope/);

  gw.file.writeText('backends: [unclosed\n');
  assert.equal((await gw.admin('/gateway/reload', { method: 'POST' })).status, 400);
  gw.file.remove();
  const missing = await gw.admin('/gateway/reload', { method: 'POST' });
  assert.match((missing.json as { detail: string }).detail, /cannot read config file/);

  assert.equal((await gw.admin('/gateway/config')).text, before);
  assert.deepEqual(await batch(gw, 'still'), ['a', 'a', 'a', 'a']);
  assert.match((await gw.call('/metrics')).text, /magma_gateway_config_reloads_total\{result="refused"\} 3/);
});

test('restart-only settings are kept and reported; the token, routes and backends change at once', async () => {
  const [a, b] = [await agent('a'), await agent('b')];
  const gw = await gateway({ ...single(a.url), server: { port: 8888 } });
  const res = await gw.reload({
    ...single(a.url),
    server: { port: 9999, body_limit_mb: 1 },
    state: { replay_ttl_s: 5 },
    admin: { token: 'new-token' },
    backends: { svc: { url: a.url }, extra: { url: b.url } },
    routes: [{ name: 'x', match: { 'extra_keys.x': true }, backend: 'extra' }, { name: 'default', backend: 'svc' }],
  });
  assert.equal(res.status, 200, res.text);
  const report = res.json as { restart_required: string[]; backends: { added: string[] }; routes: string[] };
  assert.deepEqual(report.restart_required.map((s) => s.split(':', 1)[0]), ['server.port', 'server.body_limit_mb', 'state']);
  assert.deepEqual([report.backends.added, report.routes], [['extra'], ['x', 'default']]);

  assert.equal((await gw.admin('/gateway/config')).status, 401, 'the new token applies at once');
  const auth = { authorization: 'Bearer new-token' };
  const cfg = (await gw.admin('/gateway/config', { headers: auth })).json as { config: { server: { port: number; body_limit_mb: number } } };
  assert.deepEqual([cfg.config.server.port, cfg.config.server.body_limit_mb], [8888, 64]);
  const viaProxy = await gw.admin('/gateway/backends/extra/v1/info', { headers: auth });
  assert.equal((viaProxy.json as { agent_id: string }).agent_id, 'fake-b', 'a backend added by reload is reachable');
  const x = await gw.post({ request_id: 'x', inputs: [mkInput(1, { extra_keys: { x: true } })] });
  assert.equal((x.json as Cand[])[0]!.memory.seen_by, 'b');

  assert.equal((await gw.reload(single(a.url), auth)).status, 200);
  assert.equal((await gw.admin('/gateway/backends/extra/health')).status, 404, 'a removed backend is gone');
});

test('closing the gateway waits for a replaced config to drain, then its pools are closed', async () => {
  const [a, b] = [await agent('a'), await agent('b')];
  a.setBehaviour((r) => (r.path === '/v1/responses' ? { delayMs: 400 } : {}));
  const gw = await startGatewayFromFile(single(a.url));
  const first = gw.app.gateway.current;
  const slow = batch(gw, 'slow');
  await waitFor('the slow batch at the agent', () => a.inFlight === 1);
  assert.equal((await gw.reload(single(b.url))).status, 200);
  const second = gw.app.gateway.current;
  await gw.close();
  assert.deepEqual(await slow, ['a', 'a', 'a', 'a']);
  assert.ok(poolsClosed(first) && poolsClosed(second));
});

test('SIGHUP makes the running CLI re-read its config file', async () => {
  const [a, b] = [await agent('a'), await agent('b')];
  const admin = { listen: '127.0.0.1:0' };
  const file = configFile({ ...single(a.url), server: { port: 0 }, admin, log_level: 'info' });
  cleanup.push(async () => file.remove());
  const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
  const child = spawn(process.execPath, [cli, '--config', file.path], { stdio: ['ignore', 'pipe', 'pipe'] });
  cleanup.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor('the CLI listening', () => /listening at (http:\/\/127\.0\.0\.1:\d+)/.test(out), { timeoutMs: 10_000 });
  const adminLine = /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"admin listener/;
  await waitFor('the admin listener', () => adminLine.test(out), { timeoutMs: 10_000 });
  const url = adminLine.exec(out)![1]!;
  const backendUrls = async (): Promise<string[]> =>
    ((await http(`${url}/gateway/config`)).json as { config: { backends: Record<string, { urls: string[] }> } }).config.backends.svc!.urls;
  assert.deepEqual(await backendUrls(), [a.url]);

  file.write({ ...single(b.url), server: { port: 0 }, admin, log_level: 'info' });
  child.kill('SIGHUP');
  await waitFor('the new config serving', async () => (await backendUrls())[0] === b.url, { timeoutMs: 10_000 });
  // The log line travels through a pipe: it may arrive after the HTTP answer that shows the new config.
  await waitFor('the reload logged', () => /config reloaded/.test(out), { timeoutMs: 10_000 });
  file.writeText('routes: {');
  child.kill('SIGHUP');
  await waitFor('the refusal logged', () => /config reload refused/.test(out), { timeoutMs: 10_000 });
  assert.deepEqual(await backendUrls(), [b.url]);

  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
});

test("a reload reads the file with the command line's --admin-listen, as the start did: nothing to restart for it", async () => {
  const a = await agent('a');
  // The file names another address: the command line's wins, at start and at every reload.
  const file = configFile({ ...single(a.url), server: { port: 0 }, admin: { listen: '127.0.0.1:1' }, log_level: 'info' });
  cleanup.push(async () => file.remove());
  const cli = fileURLToPath(new URL('../src/cli.js', import.meta.url));
  const child = spawn(process.execPath, [cli, '--config', file.path, '--admin-listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  cleanup.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const adminLine = /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"admin listener/;
  await waitFor('the admin listener', () => adminLine.test(out), { timeoutMs: 10_000 });
  const url = adminLine.exec(out)![1]!;
  const res = await http(`${url}/gateway/reload`, { method: 'POST' });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual((res.json as { restart_required: string[] }).restart_required, []);
  child.kill('SIGKILL');
});
