import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientConnectionCap, openFileLimit } from '../src/fd-limit.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            256                  524288               files
Max locked memory         8388608              8388608              bytes
`;

test('the soft open-file limit is read from /proc/self/limits text', () => {
  assert.equal(openFileLimit(LIMITS), 256);
  assert.equal(openFileLimit(LIMITS.replace('256  ', 'unlimited')), undefined);
  assert.equal(openFileLimit('nothing here'), undefined);
});

test('on this machine the limit is read from the process itself', () => {
  const n = openFileLimit();
  assert.ok(n === undefined || (Number.isInteger(n) && n > 0));
});

test('client connections are capped at three quarters of the open-file limit', () => {
  assert.equal(clientConnectionCap(1024, 256), 192, 'a 256-descriptor process keeps 64 for backends, Redis, probes');
  assert.equal(clientConnectionCap(100, 256), 100, 'a lower configured cap stands');
  assert.equal(clientConnectionCap(1024, undefined), 1024, 'no known limit: the configured cap');
});
