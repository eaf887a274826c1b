/**
 * Who may ask the agent listener (docs/operations.md#client-keys, docs/operations.md#client-keys):
 * the one decision both fronts render.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accessLabel, decideAccess, KEY_CHALLENGE, refusalHeaders, type Access, type KeyCarriers } from '../../src/clients/access.js';
import { ClientTable } from '../../src/clients/client-table.js';

const KEY_A = 'a-key-0123456789abcdef';
const KEY_B = 'b-key-0123456789abcdef';
const table = new ClientTable({ 'team-a': { key: KEY_A, max_wait_s: 30 }, 'team-b': { key: KEY_B, max_wait_s: 30 } });

function carriers(over: Partial<KeyCarriers>): KeyCarriers {
  return { path: undefined, authorization: undefined, apiKey: undefined, ...over };
}

function refusal(a: Access): Extract<Access, { ok: false }> {
  assert.equal(a.ok, false, JSON.stringify(a));
  return a as Extract<Access, { ok: false }>; // asserted above
}

function client(a: Access): string | undefined {
  assert.equal(a.ok, true, JSON.stringify(a));
  return (a as Extract<Access, { ok: true }>).client?.name; // asserted above
}

test('each transport finds its client: the address, Authorization: Bearer, x-api-key', () => {
  assert.equal(client(decideAccess(table, carriers({ path: KEY_A }), 'required')), 'team-a');
  assert.equal(client(decideAccess(table, carriers({ authorization: `Bearer ${KEY_B}` }), 'required')), 'team-b');
  assert.equal(client(decideAccess(table, carriers({ authorization: `bearer  ${KEY_B} ` }), 'required')), 'team-b');
  assert.equal(client(decideAccess(table, carriers({ apiKey: KEY_A }), 'required')), 'team-a');
});

test('the same key in several places is accepted', () => {
  const all = carriers({ path: KEY_A, authorization: `Bearer ${KEY_A}`, apiKey: KEY_A });
  assert.equal(client(decideAccess(table, all, 'required')), 'team-a');
});

test('keys that differ are refused, even when each alone is valid', () => {
  for (const c of [
    carriers({ path: KEY_A, authorization: `Bearer ${KEY_B}` }),
    carriers({ path: KEY_A, apiKey: KEY_B }),
    carriers({ authorization: `Bearer ${KEY_A}`, apiKey: 'wrong' }),
  ]) {
    const r = refusal(decideAccess(table, c, 'required'));
    assert.equal(r.status, 401);
    assert.equal(r.code, 'GATEWAY_ERR_UNAUTHORIZED');
    assert.match(r.detail, /differ/);
  }
});

test('a missing key is 401 saying the three ways to send one', () => {
  const r = refusal(decideAccess(table, carriers({}), 'required'));
  assert.equal(r.status, 401);
  assert.match(r.detail, /\/k\/<key>/);
  assert.match(r.detail, /Authorization: Bearer/);
  assert.match(r.detail, /x-api-key/);
});

test('a wrong key is 401 and the message never holds what was sent', () => {
  for (const wrong of ['nope', KEY_A.slice(0, -1), `${KEY_A}x`, '', KEY_A.toUpperCase()]) {
    const r = refusal(decideAccess(table, carriers({ path: wrong }), 'required'));
    assert.equal(r.status, 401);
    assert.equal(r.detail, 'unknown client key');
  }
});

test('an Authorization header of another scheme is no key', () => {
  const r = refusal(decideAccess(table, carriers({ authorization: `Basic ${KEY_A}` }), 'required'));
  assert.match(r.detail, /client key required/);
  assert.equal(client(decideAccess(table, carriers({ authorization: 'Basic xyz', path: KEY_A }), 'required')), 'team-a');
});

test('a repeated x-api-key header is one value that matches no key', () => {
  assert.equal(refusal(decideAccess(table, carriers({ apiKey: [KEY_A, KEY_A] }), 'required')).detail, 'unknown client key');
});

test('optional paths answer without a key, but a wrong key given there is refused', () => {
  assert.equal(client(decideAccess(table, carriers({}), 'optional')), undefined);
  assert.equal(client(decideAccess(table, carriers({ apiKey: KEY_B }), 'optional')), 'team-b');
  assert.equal(refusal(decideAccess(table, carriers({ path: 'mistyped' }), 'optional')).status, 401);
});

test('ignored paths do not look at keys at all (the admin token travels as a bearer there)', () => {
  assert.equal(client(decideAccess(table, carriers({ authorization: 'Bearer admin-token' }), 'ignored')), undefined);
  assert.equal(client(decideAccess(table, carriers({ path: 'anything' }), 'ignored')), undefined);
});

test('without clients every request is anonymous and headers are not read; a /k/ address is a 404 naming clients:', () => {
  assert.equal(client(decideAccess(undefined, carriers({ authorization: 'Bearer x', apiKey: 'y' }), 'required')), undefined);
  for (const rule of ['required', 'optional', 'ignored'] as const) {
    const r = refusal(decideAccess(undefined, carriers({ path: 'some-key' }), rule));
    assert.equal(r.status, 404);
    assert.equal(r.code, 'GATEWAY_ERR_NOT_FOUND');
    assert.match(r.detail, /clients:/);
    assert.ok(!r.detail.includes('some-key'));
  }
});

test('the metrics label is the client name, anonymous, or unauthorized for a refused key', () => {
  assert.equal(accessLabel(decideAccess(table, carriers({ path: KEY_A }), 'required')), 'team-a');
  assert.equal(accessLabel(decideAccess(table, carriers({}), 'optional')), 'anonymous');
  assert.equal(accessLabel(decideAccess(table, carriers({ path: 'x' }), 'required')), 'unauthorized');
  assert.equal(accessLabel(decideAccess(undefined, carriers({ path: 'x' }), 'required')), 'anonymous');
});

test('a 401 carries the Bearer challenge; every refusal closes the connection', () => {
  assert.deepEqual(refusalHeaders(refusal(decideAccess(table, carriers({}), 'required'))), {
    'www-authenticate': KEY_CHALLENGE,
    connection: 'close',
  });
  assert.deepEqual(refusalHeaders(refusal(decideAccess(undefined, carriers({ path: 'k' }), 'required'))), { connection: 'close' });
});
