/**
 * Every 413 names the limit it hit (docs/errors.md): an outcomes body over experiments.outcomes_max_bytes names
 * that key and its bytes, with or without a declared length; the other admin endpoints and the agent port name
 * server.body_limit_mb.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { postBytes } from '../helpers/raw-http.js';

function detailOf(body: Buffer): { detail: string; code: string } {
  return JSON.parse(body.toString('utf8')) as { detail: string; code: string };
}

test('each 413 names its own key: outcomes_max_bytes for outcomes, server.body_limit_mb for the rest', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const gw = await f.gateway(oneBackend({ a }, { server: { body_limit_mb: 1 }, experiments: { outcomes_max_bytes: 2048 } }));
  const outcomes = Buffer.from(JSON.stringify({ outcomes: Array.from({ length: 100 }, () => ({ trajectory: '0'.repeat(32), success: true })) }));
  assert.ok(outcomes.length > 2048 && outcomes.length < 1024 * 1024);
  for (const chunked of [false, true]) {
    const res = await postBytes(gw.adminUrl, outcomes, { path: '/gateway/experiments/outcomes', chunked });
    assert.equal(res.status, 413, `chunked: ${chunked}`);
    assert.deepEqual(detailOf(res.body), { detail: 'request body exceeds experiments.outcomes_max_bytes (2048 bytes)', code: 'GATEWAY_ERR_BODY_TOO_LARGE' });
  }
  const big = Buffer.from(JSON.stringify({ route: 'x'.repeat(1024 * 1024) }));
  for (const path of ['/gateway/experiments/reset', '/gateway/reload']) {
    const res = await postBytes(gw.adminUrl, big, { path });
    assert.equal(res.status, 413, path);
    assert.deepEqual(detailOf(res.body), { detail: 'request body exceeds server.body_limit_mb (1 MiB)', code: 'GATEWAY_ERR_BODY_TOO_LARGE' }, path);
  }
  const batch = await postBytes(gw.url, big);
  assert.equal(batch.status, 413);
  assert.equal(detailOf(batch.body).detail, 'request body exceeds server.body_limit_mb (1 MiB)');
  // Under the limit the same endpoint reads the body.
  const small = await postBytes(gw.adminUrl, Buffer.from('{"outcomes": []}'), { path: '/gateway/experiments/outcomes' });
  assert.equal(small.status, 200, small.body.toString());
});
