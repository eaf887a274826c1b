/**
 * The batch paths the raw front takes (http/agent-path.ts): the default agent's `/v1/responses` and a virtual
 * agent's `/agents/<name>/v1/responses`, read by plain string operations; anything else is fastify's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_AGENT_NAME_LENGTH } from '../../src/config/schema.js';
import { batchAgent } from '../../src/http/agent-path.js';

test('the default agent\'s batch path is the empty name, a virtual agent\'s batch path its name', () => {
  assert.equal(batchAgent('/v1/responses'), '');
  assert.equal(batchAgent('/agents/ab-kitchen/v1/responses'), 'ab-kitchen');
  assert.equal(batchAgent('/agents/a.b_C-9/v1/responses'), 'a.b_C-9');
});

test('other URLs are left to fastify: other paths, query strings, empty, encoded, nested or dot-only names', () => {
  for (const url of [
    '/v1/responses?x=1',
    '/v1/responses/',
    '/agents/lab/v1/responses?x=1',
    '/agents/lab/v1/responses/',
    '/agents//v1/responses',
    '/agents/v1/responses',
    '/agents/%6Cab/v1/responses',
    '/agents/a/b/v1/responses',
    '/agents/../v1/responses',
    '/agents/./v1/responses',
    '/agents/lab/v1/info',
    '/agents/lab/health',
    '//agents/lab/v1/responses',
    '/AGENTS/lab/v1/responses',
    '/agents/l ab/v1/responses',
    '',
  ]) {
    assert.equal(batchAgent(url), undefined, url);
  }
});

test('a name longer than any agent name can be, or with a bad character anywhere, is left to fastify', () => {
  const longest = 'a'.repeat(MAX_AGENT_NAME_LENGTH);
  assert.equal(batchAgent(`/agents/${longest}/v1/responses`), longest);
  assert.equal(batchAgent(`/agents/${longest}a/v1/responses`), undefined);
  assert.equal(batchAgent(`/agents/${'a'.repeat(100_000)}/v1/responses`), undefined);
  assert.equal(batchAgent(`/agents/ab:c/v1/responses`), undefined);
});
