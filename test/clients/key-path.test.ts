/**
 * The client key in the address (docs/operations.md#client-keys): `/k/<key>` split off the path served, redacted in what
 * is logged, and the health-check paths that answer without a key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isHealthPath, redactKeyPaths, splitKeyPath } from '../../src/clients/key-path.js';

test('/k/<key>/... splits into the key and the path served, query kept', () => {
  assert.deepEqual(splitKeyPath('/k/abc123/v1/responses'), { key: 'abc123', rest: '/v1/responses' });
  assert.deepEqual(splitKeyPath('/k/abc/agents/ab-kitchen/v1/responses'), { key: 'abc', rest: '/agents/ab-kitchen/v1/responses' });
  assert.deepEqual(splitKeyPath('/k/abc/v1/info?x=1'), { key: 'abc', rest: '/v1/info?x=1' });
});

test('a key alone, or followed by a query, leaves the root path', () => {
  assert.deepEqual(splitKeyPath('/k/abc'), { key: 'abc', rest: '/' });
  assert.deepEqual(splitKeyPath('/k/abc?x=1'), { key: 'abc', rest: '/?x=1' });
  assert.deepEqual(splitKeyPath('/k/'), { key: '', rest: '/' });
  assert.deepEqual(splitKeyPath('/k//health'), { key: '', rest: '/health' });
});

test('only a leading, lower-case /k/ is a key prefix', () => {
  for (const url of ['/v1/responses', '/k', '/K/abc/health', '/kk/abc/health', '/agents/k/abc', '/x/k/abc/health']) {
    assert.equal(splitKeyPath(url), undefined, url);
  }
});

test('a percent-encoded key is decoded; one that does not decode is kept as it came', () => {
  assert.deepEqual(splitKeyPath('/k/a%2Fb%20c/health'), { key: 'a/b c', rest: '/health' });
  assert.deepEqual(splitKeyPath('/k/ab%zz/health'), { key: 'ab%zz', rest: '/health' });
});

test('only the first key prefix is taken: a second one stays in the path', () => {
  assert.deepEqual(splitKeyPath('/k/a/k/b/v1/info'), { key: 'a', rest: '/k/b/v1/info' });
});

test('redaction replaces the segment after every /k/ of the path and nothing else', () => {
  assert.equal(redactKeyPaths('/v1/info'), '/v1/info');
  assert.equal(redactKeyPaths('/k/secret/v1/info'), '/k/REDACTED/v1/info');
  assert.equal(redactKeyPaths('/k/secret'), '/k/REDACTED');
  assert.equal(redactKeyPaths('/k/one/k/two/v1/info?a=/k/q'), '/k/REDACTED/k/REDACTED/v1/info?a=/k/q');
  assert.equal(redactKeyPaths('/agents/x/k/secret/v1/responses'), '/agents/x/k/REDACTED/v1/responses');
  assert.equal(redactKeyPaths('/k/secret?x=1'), '/k/REDACTED?x=1');
});

test('redaction of a long path of repeated prefixes stays linear and complete', () => {
  const url = '/k/s'.repeat(50_000);
  const out = redactKeyPaths(url);
  assert.equal(out, '/k/REDACTED'.repeat(50_000));
  assert.ok(!out.includes('/k/s'));
});

test('health checks are /health and a virtual agent\'s /agents/<name>/health, query ignored', () => {
  for (const p of ['/health', '/health?probe=1', '/agents/ab-kitchen/health', '/agents/:agent/health']) assert.ok(isHealthPath(p), p);
  for (const p of ['/healthz', '/v1/health', '/agents//health', '/agents/a/b/health', '/agents/health', '/x/agents/a/health', '/health/x']) {
    assert.ok(!isHealthPath(p), p);
  }
});
