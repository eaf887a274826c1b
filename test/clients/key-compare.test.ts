/** The constant-time comparison and the bearer reading shared by the admin token and client keys. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearerToken, digestsEqual, keyDigest, tokenMatches } from '../../src/clients/key-compare.js';

test('tokens match exactly, whatever their lengths', () => {
  assert.ok(tokenMatches('s3cret', 's3cret'));
  assert.ok(!tokenMatches('s3cre', 's3cret'));
  assert.ok(!tokenMatches('s3cret-and-more', 's3cret'));
  assert.ok(!tokenMatches('', 's3cret'));
  assert.ok(digestsEqual(keyDigest('x'), keyDigest('x')));
  assert.ok(!digestsEqual(keyDigest('x'), keyDigest('y')));
});

test('the bearer token is read case-insensitively, one token only', () => {
  assert.equal(bearerToken('Bearer abc'), 'abc');
  assert.equal(bearerToken('bearer \tabc  '), 'abc');
  assert.equal(bearerToken('Bearer a b'), undefined);
  assert.equal(bearerToken('Basic abc'), undefined);
  assert.equal(bearerToken('Bearer'), undefined);
  assert.equal(bearerToken(undefined), undefined);
});
