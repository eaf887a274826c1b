/**
 * An admin listener without a token is allowed on loopback, and `validate` warns about it
 * (docs/operations.md#admin-security): the Host and Origin rules keep browsers out, not local processes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateCommand } from '../../src/commands/validate.js';
import { parseConfigText } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';
import { configFile } from '../helpers/config-file.js';

const BASE = ['backends:', '  qwen: { url: http://127.0.0.1:8001 }', 'routes:', '  - { name: d, backend: qwen }'];

test('an admin listener without a token (or with an empty one) is a warning; with a token or without a listener, none', () => {
  const warned = (...admin: string[]): string[] => configWarnings(parseConfigText([...BASE, ...admin, ''].join('\n'), 'c.yaml', { T: '' })).map((w) => w.path);
  assert.deepEqual(warned('admin:', '  listen: 127.0.0.1:9901'), ['admin.token']);
  assert.deepEqual(warned('admin:', '  listen: 127.0.0.1:9901', '  token: "${T:-}"'), ['admin.token']);
  assert.deepEqual(warned('admin:', '  listen: 127.0.0.1:9901', '  token: long-enough-admin-token'), []);
  assert.deepEqual(warned(), []);
});

test('magma-gateway validate prints it and still exits 0', () => {
  const file = configFile({ admin: { listen: '127.0.0.1:9901' }, backends: { qwen: { url: 'http://127.0.0.1:8001' } }, routes: [{ name: 'd', backend: 'qwen' }] });
  try {
    let out = '';
    const code = validateCommand(['--config', file.path], { out: (s) => void (out += s), err: (s) => void (out += s) }, {});
    assert.equal(code, 0, out);
    assert.match(out, /warning: .*: admin\.token: the admin listener 127\.0\.0\.1:9901 has no token: any process on this host can .*reset/);
  } finally {
    file.remove();
  }
});
