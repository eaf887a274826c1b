/**
 * The `magma-gateway` command as a user starts it: a config file, a port, signals.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { stringify } from 'yaml';
import { killAll } from './helpers/cli-process.js';
import { oneBackend, useFixtures } from './helpers/fixtures.js';
import { gatewayAt, mkInput } from './helpers/gateway.js';
import { waitFor, waitHealthy } from './helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'mgw-cli-'));
after(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

test('an invalid config file stops the start with exit code 2 and names the place in the file', async (t) => {
  const path = join(dir, 'bad.yaml');
  writeFileSync(path, 'backends:\n  a: { url: http://127.0.0.1:1 }\nroutes:\n  - name: r\n    backend: nope\n');
  const r = useFixtures(t).cli(['--config', path]);
  assert.equal(await r.exit, 2);
  const out = r.stdout() + r.stderr();
  assert.match(out, /bad\.yaml:5:\d+/);
  assert.match(out, /routes\[0\]\.backend/);
});

test('SIGTERM stops accepting, finishes the batch in flight, then exits 0', async (t) => {
  const f = useFixtures(t);
  const agent = await f.agent({ name: 'slow', behaviour: (r) => (r.path === '/v1/responses' ? { delayMs: 600 } : {}) });
  const path = join(dir, 'ok.yaml');
  // Port 0: the OS picks a free port, and the CLI logs where it listens (at log_level info).
  writeFileSync(path, stringify(oneBackend({ slow: agent }, { server: { port: 0 }, log_level: 'info' })));
  const cli = f.cli(['--config', path]);
  const listening = /listening at (http:\/\/127\.0\.0\.1:\d+)/;
  await waitFor('the CLI listening', () => listening.test(cli.stdout()), { timeoutMs: 10_000, detail: () => cli.stdout() + cli.stderr() });
  const url = listening.exec(cli.stdout())![1]!;
  await waitHealthy(url);
  const pending = gatewayAt(url).post({ request_id: 'term', inputs: [mkInput(1)] });
  await waitFor('the batch at the agent', () => agent.inFlight === 1);
  cli.child.kill('SIGTERM');
  const res = await pending;
  assert.equal(res.status, 200);
  const [c] = res.json as { status: string }[];
  assert.equal(c!.status, 'completed');
  assert.equal(await cli.exit, 0);
});
