/**
 * What the gateway logs at start, read from the CLI's stdout as an operator reads it: the summary line
 * (listen address, routes with their backends, replicas, store), a warning naming each replica that is not
 * ready after the first probe and each route that cannot serve, config warnings, ISO timestamps, and
 * --log-level / MAGMA_GATEWAY_LOG_LEVEL overriding the config's log_level, and the V8 heap growth in force
 * (the gateway's own, or the one node was started with).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { killAll } from './helpers/cli-process.js';
import { useFixtures } from './helpers/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'mgw-cli-logs-'));
after(killAll);

const SUMMARY = (l: Record<string, unknown>): boolean => String(l.msg).startsWith('magma-gateway ') && 'listen' in l;
const NOT_READY = (l: Record<string, unknown>): boolean => String(l.msg).includes('is not ready at start');

function config(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

test('start with one backend down: summary line, then a warning naming the down replica and the route that cannot serve', async (t) => {
  const f = useFixtures(t);
  const up = await f.agent({ name: 'up' });
  const path = config(
    'mixed.yaml',
    [
      'server: { port: 0 }',
      'log_level: info',
      'backends:',
      `  up: { url: "${up.url}" }`,
      '  down: { urls: ["http://127.0.0.1:1", "http://user:secret@127.0.0.1:2"] }',
      'routes:',
      '  - { name: ab, match: { extra_keys.ab: true }, split: { up: 1, down: 1 } }',
      '  - { name: only-down, match: { extra_keys.d: true }, backend: down, fallback: [down] }',
      '  - { name: default, backend: up }',
      '',
    ].join('\n'),
  );
  const r = f.cli(['--config', path]);
  const summary = await r.logLine(SUMMARY);
  assert.equal(summary.level, 30);
  const listen = summary.listen as string[];
  assert.match(listen[0]!, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(String(summary.msg), /serving on http:\/\/127\.0\.0\.1:\d+: 3 routes, 2 backends \(3 replicas\), store memory$/);
  assert.deepEqual(summary.routes, [
    'ab -> split up 1, down 1',
    'only-down -> down (fallback down)',
    'default -> up (catch-all)',
  ]);
  assert.deepEqual(summary.backends, { up: [up.url], down: ['http://127.0.0.1:1', 'http://***@127.0.0.1:2'] });
  assert.equal(summary.store, 'memory');
  assert.match(String(summary.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  await r.logLine((l) => l.replica === 'down#1' && NOT_READY(l));
  const lines = r.logLines();
  const notReady = lines.filter(NOT_READY);
  assert.deepEqual(notReady.map((l) => l.replica).sort(), ['down#0', 'down#1']);
  for (const l of notReady) {
    assert.equal(l.level, 40);
    assert.equal(l.state, 'not_ready');
    assert.match(String(l.reason), /cannot connect/);
  }
  assert.equal(notReady.find((l) => l.replica === 'down#1')!.url, 'http://***@127.0.0.1:2');
  assert.ok(!JSON.stringify(lines).includes('secret'), 'no URL password in the log');
  const route = await r.logLine((l) => l.route === 'only-down');
  assert.match(String(route.msg), /route only-down has no ready backend at start: \/health answers 503/);
  assert.ok(!lines.some((l) => l.route === 'ab' || l.route === 'default'), 'routes that can serve are not warned about');
  const warning = await r.logLine((l) => String(l.msg).startsWith('config warning:'));
  assert.equal(warning.path, 'routes[1].fallback[0]');
});

const DOWN = 'server: { port: 0 }\nlog_level: info\nbackends:\n  a: { url: "http://127.0.0.1:1" }\nroutes:\n  - { name: d, backend: a }\n';

test('--log-level warn overrides the config: the info summary is gone, the warnings stay', async (t) => {
  const f = useFixtures(t);
  const r = f.cli(['--config', config('down.yaml', DOWN), '--log-level', 'warn']);
  await r.logLine(NOT_READY);
  // The summary is written before the warnings, in the same tick: had it been enabled, it would be here.
  assert.ok(!r.logLines().some((l) => (l.level as number) < 40), r.stdout());
});

test('MAGMA_GATEWAY_LOG_LEVEL overrides the config; --log-level wins over it', async (t) => {
  const f = useFixtures(t);
  const r = f.cli(['--config', config('down2.yaml', DOWN.replace('log_level: info', 'log_level: error'))], { MAGMA_GATEWAY_LOG_LEVEL: 'info' });
  assert.equal((await r.logLine(SUMMARY)).level, 30);
  const both = f.cli(['--config', config('down3.yaml', DOWN), '--log-level', 'warn'], { MAGMA_GATEWAY_LOG_LEVEL: 'info' });
  await both.logLine(NOT_READY);
  assert.ok(!both.logLines().some((l) => (l.level as number) < 40), both.stdout());
});

const HEAP = (l: Record<string, unknown>): boolean => String(l.msg).startsWith('V8 heap growth');

test('started plainly (node dist/src/cli.js), the gateway sets its own V8 heap growth and says so', async (t) => {
  const f = useFixtures(t);
  const r = f.cli(['--config', config('heap.yaml', DOWN)]);
  const line = await r.logLine(HEAP);
  assert.equal(line.level, 30);
  assert.equal(line.heap_growing_percent, 150);
  assert.equal(line.msg, 'V8 heap growth 150% (set by the gateway)');
});

test("node's own --heap-growing-percent on its command line is kept: the gateway does not set its own", async (t) => {
  const f = useFixtures(t);
  const r = f.cli(['--config', config('heap-node.yaml', DOWN)], {}, ['--heap-growing-percent=120']);
  const line = await r.logLine(HEAP);
  assert.equal(line.node_arg, '--heap-growing-percent=120');
  assert.equal(line.heap_growing_percent, undefined);
  assert.match(String(line.msg), /from node's command line \(--heap-growing-percent=120\)/);
});
