/**
 * The batch paths the front takes (http/agent-path.ts): the default agent's `/v1/responses` and a virtual
 * agent's `/agents/<name>/v1/responses`, with or without a query string, read by plain string operations;
 * anything else is fastify's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchAgent } from '../../src/http/agent-path.js';

test('the default agent\'s batch path is the empty name, a virtual agent\'s batch path its name, query or not', () => {
  assert.equal(batchAgent('/v1/responses'), '');
  assert.equal(batchAgent('/v1/responses?x=1'), '');
  assert.equal(batchAgent('/agents/ab-kitchen/v1/responses'), 'ab-kitchen');
  assert.equal(batchAgent('/agents/lab/v1/responses?x=1'), 'lab');
  assert.equal(batchAgent('/agents/a.b_C-9/v1/responses'), 'a.b_C-9');
});

test('a percent-encoded name is decoded as fastify\'s router decodes a parameter; one that does not decode is fastify\'s', () => {
  assert.equal(batchAgent('/agents/%6Cab/v1/responses'), 'lab');
  assert.equal(batchAgent('/agents/a%2Fb/v1/responses'), 'a/b');
  assert.equal(batchAgent('/agents/a%zz/v1/responses'), undefined);
});

test('other paths are left to fastify: trailing slashes, empty or nested names, other endpoints, other spellings', () => {
  for (const url of [
    '/v1/responses/',
    '/agents/lab/v1/responses/',
    '/agents//v1/responses',
    '/agents/v1/responses',
    '/agents/a/b/v1/responses',
    '/agents/lab/v1/info',
    '/agents/lab/health',
    '//agents/lab/v1/responses',
    '/AGENTS/lab/v1/responses',
    '',
  ]) {
    assert.equal(batchAgent(url), undefined, url);
  }
});

test('a segment longer than fastify\'s parameters may be is left to fastify; a name no agent has is taken (its 404 is the batch core\'s)', () => {
  assert.equal(batchAgent(`/agents/${'a'.repeat(100)}/v1/responses`), 'a'.repeat(100));
  assert.equal(batchAgent(`/agents/${'a'.repeat(101)}/v1/responses`), undefined);
  assert.equal(batchAgent(`/agents/${'a'.repeat(100_000)}/v1/responses`), undefined);
  assert.equal(batchAgent('/agents/ab:c/v1/responses'), 'ab:c');
  assert.equal(batchAgent('/agents/../v1/responses'), '..');
});
