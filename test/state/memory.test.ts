import assert from 'node:assert/strict';
import { it } from 'node:test';
import pino from 'pino';
import { createStore, type Store } from '../../src/state/index.js';
import type { StateLog } from '../../src/state/types.js';
import { contractSuite } from './contract.js';
import { memoryConfig, recordingLog } from './helpers.js';

const stores: Store[] = [];

contractSuite('memory', {
  make: async (over) => {
    const store = createStore(memoryConfig(over), recordingLog());
    stores.push(store);
    return store;
  },
  assertIdle: async () => {}, // nothing outlives a permit in memory; the contract's own checks cover leaks
  waitQueued: async () => {}, // acquire() queues a waiter before it returns (src/state/semaphores.ts)
  cleanup: async () => {
    await Promise.all(stores.map((s) => s.close()));
  },
});

it('memory store: is always up, and a pino logger is a StateLog', () => {
  const log: StateLog = pino({ level: 'silent' });
  const store = createStore(memoryConfig(), log);
  assert.equal(store.kind, 'memory');
  assert.equal(store.isUp(), true);
});
