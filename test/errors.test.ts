import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { codeForStatus, GATEWAY_ERROR_CODES } from '../src/errors.js';

const readme = readFileSync('README.md', 'utf8');

test('every gateway error code is documented in the README error table', () => {
  for (const code of GATEWAY_ERROR_CODES) {
    assert.match(readme, new RegExp(`^\\| \`${code}\` \\| .+ \\|$`, 'm'), `${code} missing from the README table`);
  }
});

test('the README documents no gateway error code that does not exist', () => {
  const documented = [...readme.matchAll(/^\| `(gateway_[a-z_]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(documented)].sort(), [...GATEWAY_ERROR_CODES].sort());
});

test('HTTP statuses map to the documented codes', () => {
  assert.equal(codeForStatus(503), 'gateway_backend_not_ready');
  assert.equal(codeForStatus(500), 'gateway_backend_http_error');
  assert.equal(codeForStatus(502), 'gateway_backend_http_error');
  assert.equal(codeForStatus(422), 'gateway_backend_rejected');
  assert.equal(codeForStatus(429), 'gateway_backend_rejected');
});
