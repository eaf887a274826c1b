/**
 * Shutdown (src/shutdown.ts) with the real CLI and a keep-alive client: on SIGTERM the batch in flight is
 * answered with `Connection: close`, idle keep-alive connections are closed, and the process exits once the
 * last batch is answered instead of waiting for keep_alive_timeout_s; a streamed answer begun before the
 * drain has its connection closed once it is out, and the process exits 0 then; server.drain_timeout_s bounds a drain
 * that cannot finish. /health answers 503 while draining.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { startAgentServer, type AgentServer } from '../demo/agents/agent-server.js';
import { buildApp } from '../src/app.js';
import { parseConfigText } from '../src/config/load.js';
import { oneBackend, useFixtures } from './helpers/fixtures.js';
import { mkInput } from './helpers/gateway.js';
import { requestOn } from './helpers/raw-http.js';
import { waitFor, waitHealthy } from './helpers/wait.js';

const CLI = join(process.cwd(), 'dist/src/cli.js');
const dir = mkdtempSync(join(tmpdir(), 'mgw-shutdown-'));
const f = useFixtures();
f.defer(() => rmSync(dir, { recursive: true, force: true }));

/** A real agent that answers each batch only when the test opens its gate. */
async function gatedAgent(): Promise<{ agent: AgentServer; arrived: Promise<void>; open(): void }> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let arrivedNow!: () => void;
  const arrived = new Promise<void>((resolve) => (arrivedNow = resolve));
  const agent = await startAgentServer({
    info: { agent_id: 'gated' },
    decide: async () => {
      arrivedNow();
      await gate;
      return { say: 'done' };
    },
  });
  f.defer(() => agent.close());
  return { agent, arrived, open };
}

interface Cli {
  child: ChildProcess;
  url: string;
  exit: Promise<number | null>;
  /** Resolves once the output has contained `text`. */
  printed(text: string): Promise<void>;
}

let configs = 0;

async function startCli(agentUrl: string, server: Record<string, unknown>): Promise<Cli> {
  const path = join(dir, `gw-${++configs}.yaml`);
  writeFileSync(
    path,
    // Port 0: the OS picks a free port; the CLI logs it.
    stringify(oneBackend({ g: agentUrl }, { server: { port: 0, ...server }, log_level: 'info' })),
  );
  const child = spawn(process.execPath, [CLI, '--config', path], { stdio: ['ignore', 'pipe', 'pipe'] });
  f.defer(() => child.kill('SIGKILL'));
  let out = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  const onData = (d: Buffer): void => {
    out += d.toString();
    for (const w of waiters) if (out.includes(w.text)) w.resolve();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const listening = /listening at (http:\/\/127\.0\.0\.1:\d+)/;
  await waitFor('the CLI listening', () => listening.test(out) || child.exitCode !== null, { timeoutMs: 10_000, detail: () => out });
  const url = listening.exec(out)?.[1];
  if (url === undefined) assert.fail(`the CLI exited before listening:\n${out}`);
  await waitHealthy(url);
  return {
    child,
    url,
    exit,
    printed: (text) => new Promise<void>((resolve) => (out.includes(text) ? resolve() : waiters.push({ text, resolve }))),
  };
}

test('SIGTERM with a keep-alive batch in flight: answered with Connection: close, then the process exits at once', { timeout: 60_000 }, async () => {
  const { agent, arrived, open } = await gatedAgent();
  // Far longer than the test may take: an exit that waited for it would time the test out.
  const cli = await startCli(agent.url, { keep_alive_timeout_s: 600, drain_timeout_s: 600 });
  const busy = new Agent({ keepAlive: true, maxSockets: 1 });
  const idle = new Agent({ keepAlive: true, maxSockets: 1 });
  f.defer(() => [busy, idle].forEach((a) => a.destroy()));
  // An idle keep-alive connection: answered once, then left open.
  assert.equal((await requestOn(idle, `${cli.url}/health`)).res.statusCode, 200);
  const idleSocket = Object.values(idle.freeSockets).flat()[0]!;
  const idleClosed = new Promise<void>((resolve) => idleSocket.once('close', () => resolve()));

  const pending = requestOn(busy, `${cli.url}/v1/responses`, JSON.stringify({ request_id: 'term', inputs: [mkInput(1)] }));
  await arrived;
  cli.child.kill('SIGTERM');
  await cli.printed('stopping: finishing batches in flight');
  await idleClosed;
  open();
  const { res, text } = await pending;
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers.connection, 'close');
  assert.equal((JSON.parse(text) as { status: string }[])[0]!.status, 'completed');
  assert.equal(await cli.exit, 0, 'exited after the last answer, long before keep_alive_timeout_s');
});

test('SIGTERM while a streamed 8 MB answer is in flight: the answer completes, its connection closes, the process exits 0', { timeout: 60_000 }, async () => {
  const agent = await startAgentServer({ info: { agent_id: 'big' }, decide: async () => ({ say: 'x'.repeat(8 * 1024 * 1024) }) });
  f.defer(() => agent.close());
  // Far longer than the test may take: an exit that waited for either would time the test out.
  const cli = await startCli(agent.url, { keep_alive_timeout_s: 600, drain_timeout_s: 600, stream_answers_over_mb: 1 });
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
  f.defer(() => keepAlive.destroy());
  const { res, socketClosed } = await new Promise<{ res: IncomingMessage; socketClosed: Promise<void> }>((resolve, reject) => {
    const req = httpRequest(`${cli.url}/v1/responses`, { method: 'POST', agent: keepAlive, headers: { 'content-type': 'application/json' } }, (r) => {
      // Not read yet: the answer stays in flight, held back by the client.
      r.pause();
      resolve({ res: r, socketClosed: new Promise<void>((done) => req.socket?.once('close', () => done())) });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ request_id: 'stream-term', inputs: [mkInput(1)] }));
  });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['transfer-encoding'], 'chunked', 'the answer is streamed');
  assert.equal(res.headers.connection, 'keep-alive', 'begun before the drain: its head promised a kept connection');
  cli.child.kill('SIGTERM');
  await cli.printed('stopping: finishing batches in flight');
  let bytes = 0;
  res.on('data', (d: Buffer) => (bytes += d.length));
  const ended = new Promise<void>((resolve) => res.once('end', () => resolve()));
  res.resume();
  await ended;
  assert.ok(bytes > 8 * 1024 * 1024, `the whole answer came: ${bytes} bytes`);
  assert.match(String(res.trailers['x-gateway-overhead-ms']), /^\d+\.\d\d$/);
  // Idle once the answer is out: the gateway closes the connection then, and exits with it.
  await socketClosed;
  assert.equal(await cli.exit, 0, 'exited once the streamed answer was out, long before drain_timeout_s');
});

test('a drain that cannot finish is cut at server.drain_timeout_s: connections destroyed, the process exits', { timeout: 60_000 }, async () => {
  const { agent, arrived } = await gatedAgent();
  const cli = await startCli(agent.url, { keep_alive_timeout_s: 600, drain_timeout_s: 0.5 });
  const busy = new Agent({ keepAlive: true });
  f.defer(() => busy.destroy());
  const pending = requestOn(busy, `${cli.url}/v1/responses`, JSON.stringify({ request_id: 'stuck', inputs: [mkInput(1)] })).then(
    () => 'answered',
    (err: NodeJS.ErrnoException) => err.code,
  );
  await arrived;
  cli.child.kill('SIGTERM');
  assert.equal(await cli.exit, 1, 'exit code 1: the drain timed out');
  assert.equal(await pending, 'ECONNRESET', 'the batch that never finished had its connection closed');
});

test('while draining, /health answers 503 with a JSON detail', async () => {
  const cfg = parseConfigText(stringify(oneBackend({ g: 'http://127.0.0.1:9' })), 'x.yaml', {});
  const app = await buildApp({ config: cfg, logger: false, defaultMetrics: false, probeOnStart: false });
  f.defer(() => app.close());
  await app.ready();
  app.drain.begin();
  const res = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(res.statusCode, 503);
  assert.match((res.json() as { detail: string }).detail, /shutting down/);
  assert.equal(res.headers.connection, 'close');
});
