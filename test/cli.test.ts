/**
 * The `magma-gateway` command as a user starts it: a config file, a port, signals.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startFakeAgent } from './helpers/fake-agent.js';
import { waitFor, waitHealthy } from './helpers/wait.js';
import { mkInput } from './helpers/gateway.js';

const CLI = join(process.cwd(), 'dist/src/cli.js');
const dir = mkdtempSync(join(tmpdir(), 'mgw-cli-'));
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

function run(args: string[]): { child: ChildProcess; out: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  // 'close', not 'exit': it comes once stdout and stderr are drained too, so out() holds everything printed.
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, out: () => out, exit };
}

test('an invalid config file stops the start with exit code 2 and names the place in the file', async () => {
  const path = join(dir, 'bad.yaml');
  writeFileSync(path, 'backends:\n  a: { url: http://127.0.0.1:1 }\nroutes:\n  - name: r\n    backend: nope\n');
  const { out, exit } = run(['--config', path]);
  assert.equal(await exit, 2);
  assert.match(out(), /bad\.yaml:5:\d+/);
  assert.match(out(), /routes\[0\]\.backend/);
});

test('SIGTERM stops accepting, finishes the batch in flight, then exits 0', async () => {
  const agent = await startFakeAgent({ name: 'slow', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 600 } : {}) });
  const path = join(dir, 'ok.yaml');
  // Port 0: the OS picks a free port, and the CLI logs where it listens (at log_level info).
  writeFileSync(
    path,
    `server: { port: 0 }\nlog_level: info\nbackends:\n  slow: { url: "${agent.url}" }\nroutes:\n  - name: default\n    backend: slow\n`,
  );
  const { child, out, exit } = run(['--config', path]);
  try {
    const listening = /listening at (http:\/\/127\.0\.0\.1:\d+)/;
    await waitFor('the CLI listening', () => listening.test(out()), { timeoutMs: 10_000, detail: out });
    const url = listening.exec(out())![1]!;
    await waitHealthy(url);
    const pending = fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'term', inputs: [mkInput(1)] }),
    });
    await waitFor('the batch at the agent', () => agent.inFlight === 1);
    child.kill('SIGTERM');
    const res = await pending;
    assert.equal(res.status, 200);
    const [c] = (await res.json()) as { status: string }[];
    assert.equal(c!.status, 'completed');
    assert.equal(await exit, 0);
  } finally {
    await agent.close();
  }
});
