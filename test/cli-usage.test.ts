/**
 * The command line's answers to every kind of use and mistake, one test per exit code and case, run as a
 * user runs it (a separate `node dist/src/cli.js` process). A mistake is one line plus the usage and exit 2,
 * never a stack trace.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { killAll, runCli } from './helpers/cli-process.js';
import { useFixtures } from './helpers/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'mgw-cli-usage-'));
after(killAll);
const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;

function config(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
const VALID = config('ok.yaml', 'backends:\n  a: { url: "http://127.0.0.1:1" }\nroutes:\n  - { name: d, backend: a }\n');

/** One line naming the mistake, then the usage; nothing that looks like a stack frame. */
function assertUsageError(stderr: string, first: RegExp): void {
  const lines = stderr.split('\n');
  assert.match(lines[0]!, first, stderr);
  assert.match(lines[1]!, /^usage:/, stderr);
  assert.ok(!/^\s+at /m.test(stderr), `stack trace in:\n${stderr}`);
}

test('--version and version print the package version, exit 0', async () => {
  for (const arg of ['--version', 'version']) {
    const r = runCli([arg]);
    assert.equal(await r.exit, 0, arg);
    assert.equal(r.stdout(), `magma-gateway ${VERSION}\n`, arg);
  }
});

test('help, --help and help <command> print the usage, exit 0', async () => {
  for (const args of [['help'], ['--help'], ['-h']]) {
    const r = runCli(args);
    assert.equal(await r.exit, 0, args.join(' '));
    assert.match(r.stdout(), /^usage:\n/);
    assert.match(r.stdout(), /magma-gateway validate/);
  }
  const r = runCli(['help', 'validate']);
  assert.equal(await r.exit, 0);
  assert.match(r.stdout(), /^usage: magma-gateway validate/);
});

test('a mistyped command is one line with a suggestion, exit 2', async () => {
  const r = runCli(['chek', 'http://127.0.0.1:1']);
  assert.equal(await r.exit, 2);
  assertUsageError(r.stderr(), /^magma-gateway: unknown command "chek" \(did you mean "check"\?\)$/);
});

test('a config file given as a command is told to use --config, exit 2', async () => {
  const r = runCli(['gateway.yaml']);
  assert.equal(await r.exit, 2);
  assertUsageError(r.stderr(), /^magma-gateway: unknown command "gateway\.yaml" \(to run with this config file: --config gateway\.yaml\)$/);
});

test('an unknown option is one line naming it, exit 2', async () => {
  const r = runCli(['--config', VALID, '--prot', '9']);
  assert.equal(await r.exit, 2);
  assertUsageError(r.stderr(), /^magma-gateway: unknown option --prot \(did you mean --port\?\)$/);
});

test('--port abc, --port 70000 and --log-level loud are one line each, exit 2, before anything starts', async () => {
  const cases: [string[], RegExp][] = [
    [['--port', 'abc'], /--port must be a port number from 0 to 65535, got "abc"/],
    [['--port', '70000'], /--port must be a port number from 0 to 65535, got "70000"/],
    [['--log-level', 'loud'], /--log-level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"/],
    [['--port'], /--port needs a value/],
  ];
  for (const [args, msg] of cases) {
    const r = runCli(['--config', VALID, ...args]);
    assert.equal(await r.exit, 2, args.join(' '));
    assertUsageError(r.stderr(), msg);
    assert.equal(r.stdout(), '', 'nothing started, nothing logged');
  }
});

test('a bad MAGMA_GATEWAY_LOG_LEVEL is a usage error naming the variable', async () => {
  const r = runCli(['--config', VALID], { MAGMA_GATEWAY_LOG_LEVEL: 'chatty' });
  assert.equal(await r.exit, 2);
  assertUsageError(r.stderr(), /^magma-gateway: MAGMA_GATEWAY_LOG_LEVEL must be one of /);
});

test('no config file at all is a usage error, exit 2', async () => {
  const r = runCli([], { MAGMA_GATEWAY_CONFIG: '' });
  assert.equal(await r.exit, 2);
  assertUsageError(r.stderr(), /^magma-gateway: no config file given/);
});

test('a port already in use is one line naming the address, without the usage, exit 1', async (t) => {
  const f = useFixtures(t);
  const { url } = await f.server((_req, res) => res.end());
  const port = Number(new URL(url).port);
  const path = config('busy.yaml', `server: { port: ${port} }\nlog_level: silent\nbackends:\n  a: { url: "http://127.0.0.1:1" }\nroutes:\n  - { name: d, backend: a }\n`);
  const r = runCli(['--config', path]);
  assert.equal(await r.exit, 1);
  assert.match(r.stderr(), new RegExp(`^magma-gateway: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use[^\n]*\n$`));
  // The same for the admin listener, its address given on the command line.
  const admin = runCli(['--config', path, '--port', '0', '--admin-listen', `127.0.0.1:${port}`]);
  assert.equal(await admin.exit, 1);
  assert.match(admin.stderr(), new RegExp(`^magma-gateway: admin\\.listen: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use[^\n]*\n$`));
});

test('--admin-listen and MAGMA_GATEWAY_ADMIN_LISTEN, --port and MAGMA_GATEWAY_PORT: checked before anything starts', async () => {
  const path = config('flags.yaml', 'log_level: silent\nbackends:\n  a: { url: "http://127.0.0.1:1" }\nroutes:\n  - { name: d, backend: a }\n');
  const bad = runCli(['--config', path, '--admin-listen', 'nowhere']);
  assert.equal(await bad.exit, 2);
  assertUsageError(bad.stderr(), /^magma-gateway: --admin-listen must be host:port .*got "nowhere"$/);
  const badEnv = runCli(['--config', path], { MAGMA_GATEWAY_ADMIN_LISTEN: '127.0.0.1:99999' });
  assert.equal(await badEnv.exit, 2);
  assertUsageError(badEnv.stderr(), /^magma-gateway: MAGMA_GATEWAY_ADMIN_LISTEN must be host:port/);
  const badPort = runCli(['--config', path], { MAGMA_GATEWAY_PORT: 'eighty' });
  assert.equal(await badPort.exit, 2);
  assertUsageError(badPort.stderr(), /^magma-gateway: MAGMA_GATEWAY_PORT must be a port number from 0 to 65535, got "eighty"$/);
  const open = runCli(['--config', path, '--admin-listen', '0.0.0.0:0']);
  assert.equal(await open.exit, 2);
  assertUsageError(open.stderr(), /^magma-gateway: --admin-listen 0\.0\.0\.0:0: an admin listener beyond loopback needs admin\.token/);
});

test('validate: a valid file exits 0 with its summary and warnings', async () => {
  const path = config('warn.yaml', 'backends:\n  a: { url: "http://127.0.0.1:1" }\nroutes:\n  - { name: d, backend: a, fallback: [a] }\n');
  const r = runCli(['validate', '--config', path]);
  assert.equal(await r.exit, 0, r.stderr());
  const out = r.stdout();
  assert.match(out, new RegExp(`^${path.replace(/[.]/g, '\\.')}: valid \\(1 warning\\)\n`));
  assert.match(out, /^ {4}d -> a \(fallback a; catch-all\)$/m);
  assert.match(out, /^warning: .*routes\[0\]\.fallback\[0\]: route "d" falls back to "a", its only backend/m);
  const env = runCli(['validate'], { MAGMA_GATEWAY_CONFIG: VALID });
  assert.equal(await env.exit, 0);
  assert.match(env.stdout(), /: valid\n/);
});

test('validate: an invalid file exits 2 listing every problem', async () => {
  const path = config('bad.yaml', 'sever: {}\nbackends:\n  a: { url: "ftp://x" }\nroutes:\n  - { name: d, backend: b }\n');
  const r = runCli(['validate', path]);
  assert.equal(await r.exit, 2);
  const err = r.stderr();
  assert.match(err, /\(3 problems\)/);
  assert.match(err, /bad\.yaml:1:1: sever: unknown key "sever" \(did you mean "server"\?\)/);
  assert.match(err, /bad\.yaml:3:\d+: backends\.a\.url: must be an http:\/\/ or https:\/\/ URL/);
  assert.match(err, /bad\.yaml:5:\d+: routes\[0\]\.backend: unknown backend "b"/);
  assert.equal(r.stdout(), '');
});

test('validate: no file, two files or an unknown option are usage errors, exit 2', async () => {
  for (const args of [['validate'], ['validate', 'a.yaml', '--config', 'b.yaml'], ['validate', '--strict']]) {
    const r = runCli(args, { MAGMA_GATEWAY_CONFIG: '' });
    assert.equal(await r.exit, 2, args.join(' '));
    assert.match(r.stderr().split('\n')[0]!, /^magma-gateway validate: /);
    assert.match(r.stderr().split('\n')[1]!, /^usage: magma-gateway validate/);
  }
});

test('check takes the agent URL as the argument or as --url, the same way', async (t) => {
  const agent = await useFixtures(t).agent({ name: 'conformant' });
  for (const args of [['check', agent.url, '--json'], ['check', '--url', agent.url, '--json']]) {
    const r = runCli(args);
    assert.equal(await r.exit, 0, `${args.join(' ')}\n${r.stdout()}${r.stderr()}`);
    const body = JSON.parse(r.stdout()) as { agent: string; failed: number };
    assert.equal(body.agent, agent.url);
    assert.equal(body.failed, 0);
  }
});

test('check and report with two different URLs, or none, are usage errors, exit 2', async () => {
  const cases: [string[], RegExp][] = [
    [['check', 'http://a:1', '--url', 'http://b:1'], /^magma-gateway check: two different agent URLs given/],
    [['report', 'http://a:1', '--url', 'http://b:1'], /^magma-gateway report: two different admin URLs given/],
    [['check'], /^magma-gateway check: missing the agent URL/],
    [['report', 'ftp://x'], /^magma-gateway report: not an http\(s\) URL/],
  ];
  for (const [args, first] of cases) {
    const r = runCli(args);
    assert.equal(await r.exit, 2, args.join(' '));
    assert.match(r.stderr(), first);
    assert.ok(!/^\s+at /m.test(r.stderr()));
  }
});

test('on a shared machine: the port from --port, the admin listener from MAGMA_GATEWAY_ADMIN_LISTEN, no config edit', async (t) => {
  const f = useFixtures(t);
  const path = config('shared.yaml', 'log_level: info\nbackends:\n  a: { url: "http://127.0.0.1:1" }\nroutes:\n  - { name: d, backend: a }\n');
  const run = f.cli(['--config', path, '--port', '0'], { MAGMA_GATEWAY_ADMIN_LISTEN: '127.0.0.1:0' });
  const line = await run.logLine((l) => l.msg === 'admin listener: /gateway/* and the backend passthrough');
  const res = await fetch(`${String(line.url)}/gateway/overview`);
  assert.equal(res.status, 200);
});

test('a reader that stops early (| head) ends the output: no stack trace, the exit code of the command', async () => {
  const r = runCli(['validate', '--config', VALID]);
  // The read end closed before the command writes: its write fails with EPIPE.
  r.child.stdout!.destroy();
  assert.equal(await r.exit, 0);
  assert.equal(r.stderr(), '');
});
