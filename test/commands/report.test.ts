/**
 * `report` takes the admin listener's URL the same way `check` takes the agent URL: as the argument or as --url, with
 * the same table either way (docs/operations.md#command-line), against a real gateway.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { reportCommand } from '../../src/commands/report.js';
import type { CommandIo } from '../../src/commands/args.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let a: FakeAgent;
let b: FakeAgent;
let gw: TestGateway;

before(async () => {
  a = await startFakeAgent({ name: 'a' });
  b = await startFakeAgent({ name: 'b' });
  gw = await startGateway({ backends: { a: { url: a.url }, b: { url: b.url } }, routes: [{ name: 'ab', split: { a: 1, b: 1 } }] });
});
after(async () => {
  await gw.close();
  await Promise.all([a.close(), b.close()]);
});

function admin(): string {
  assert.notEqual(gw.adminUrl, '', 'the test gateway has an admin listener');
  return gw.adminUrl;
}

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CommandIo = { out: (t) => void (out += t), err: (t) => void (err += t) };
  return { code: await reportCommand(argv, io), out, err };
}

test('report <url> and report --url <url> print the same report', async () => {
  const positional = await run([admin(), '--json']);
  const flag = await run(['--url', admin(), '--json']);
  assert.equal(positional.code, 0, positional.err);
  assert.equal(flag.code, 0, flag.err);
  const routes = (JSON.parse(positional.out) as { experiments: { route: string }[] }).experiments.map((r) => r.route);
  assert.deepEqual(routes, ['ab']);
  const strip = (text: string): unknown => ({ ...(JSON.parse(text) as object), generated_at: null });
  assert.deepEqual(strip(positional.out), strip(flag.out));
  const same = await run([admin(), '--url', admin(), '--json']);
  assert.equal(same.code, 0, 'the same URL twice is not a conflict');
});

test('report with an extra argument or a bad --timeout is a usage error', async () => {
  const extra = await run([gw.url, 'http://other:1']);
  assert.equal(extra.code, 2);
  assert.match(extra.err, /^magma-gateway report: unexpected extra argument "http:\/\/other:1"\n/);
  const timeout = await run([gw.url, '--timeout', 'soon']);
  assert.equal(timeout.code, 2);
  assert.match(timeout.err, /^magma-gateway report: --timeout must be a positive number of seconds, got "soon"\n/);
});
