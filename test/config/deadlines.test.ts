/**
 * Deadlines that fit a client waiting 360 s (docs/limits-and-edges.md#deadlines): the defaults answer with
 * error candidates before such a client gives up, and `validate` warns about any deadline set past it.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { parseConfigText } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';
import { killAll, runCli } from '../helpers/cli-process.js';
import { configFile } from '../helpers/config-file.js';

after(killAll);

const MINIMAL = ['backends:', '  qwen: { url: http://127.0.0.1:8001 }', 'routes:', '  - { name: d, backend: qwen }', ''].join('\n');

test('the default batch deadline ends before 360 s and a backend timeout fits under it', () => {
  const c = parseConfigText(MINIMAL, 'c.yaml', {});
  assert.ok(c.request_timeout_s < 360, String(c.request_timeout_s));
  assert.ok(c.backends.qwen!.timeout_s < c.request_timeout_s);
  assert.deepEqual(configWarnings(c), []);
});

test('every deadline above 360 s is a warning naming its key', () => {
  const text = [
    'request_timeout_s: 600',
    'backends:',
    '  qwen: { url: http://127.0.0.1:8001, timeout_s: 400, queue_timeout_s: 361 }',
    '  ok: { url: http://127.0.0.1:8002, timeout_s: 360 }',
    'routes:',
    '  - { name: d, backend: qwen }',
    'clients:',
    '  team: { key: ka-0123456789abcdef0123, max_wait_s: 500 }',
    '',
  ].join('\n');
  const warnings = configWarnings(parseConfigText(text, 'c.yaml', {}));
  assert.deepEqual(
    warnings.map((w) => w.path),
    ['request_timeout_s', 'backends.qwen.timeout_s', 'backends.qwen.queue_timeout_s', 'clients.team.max_wait_s'],
  );
  assert.match(warnings[0]!.message, /600 s, above the 360 s a BENCH client waits/);
});

test('magma-gateway validate prints the deadline warning', async () => {
  const file = configFile({ request_timeout_s: 400, backends: { qwen: { url: 'http://127.0.0.1:8001' } }, routes: [{ name: 'd', backend: 'qwen' }] });
  try {
    const run = runCli(['validate', '--config', file.path]);
    const code = await run.exit;
    const out = run.stdout() + run.stderr();
    assert.equal(code, 0, out);
    assert.match(out, /request_timeout_s: the batch deadline is 400 s, above the 360 s/);
  } finally {
    file.remove();
  }
});
