/** Which client a key belongs to (docs/operations.md#client-keys): exact matches only, every client's key compared. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClientTable } from '../../src/clients/client-table.js';

const clients = {
  alpha: { key: 'alpha-key-0123456789', max_wait_s: 30 },
  beta: { key: 'beta-key-0123456789', max_wait_s: 30 },
  gamma: { key: 'gamma-key-0123456789', max_wait_s: 30 },
};

test('each key finds its own client, whatever its position', () => {
  const t = new ClientTable(clients);
  assert.deepEqual(t.names, ['alpha', 'beta', 'gamma']);
  for (const [name, c] of Object.entries(clients)) assert.equal(t.find(c.key)?.name, name);
});

test('a prefix, an extension, another case or an empty key finds nobody', () => {
  const t = new ClientTable(clients);
  for (const k of ['alpha-key-012345678', 'alpha-key-01234567890', 'ALPHA-KEY-0123456789', '', ' alpha-key-0123456789']) {
    assert.equal(t.find(k), undefined, k);
  }
});

test('a table keeps no key text: only names and digests', () => {
  const t = new ClientTable(clients);
  const seen = JSON.stringify(t) + JSON.stringify(Object.values(t as unknown as Record<string, unknown>).map(String));
  for (const c of Object.values(clients)) assert.ok(!seen.includes(c.key));
});
