/**
 * Shared state of the gateway (the `state` config key, README "Several gateway replicas (Redis)"): createStore picks
 * the in-memory store, or the Redis store
 * when `state.redis` is configured. Callers see one interface (types.ts) either way.
 */
import { createHash } from 'node:crypto';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { StateConfig, StateLog, Store } from './types.js';

export type {
  AcquireOptions,
  Permit,
  ReplayBegin,
  ReplayLease,
  StateConfig,
  StateLog,
  Store,
  StoreStats,
} from './types.js';

export function createStore(config: StateConfig, log: StateLog): Store {
  return config.redis === undefined ? new MemoryStore(config, log) : new RedisStore(config, log);
}

/**
 * The body hash replay compares: SHA-256 of the request body's bytes as received. Two batches replay each
 * other only when byte-identical, the safe reading of "the same body".
 */
export function hashBody(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('base64url');
}

/**
 * Resolves true once the store is up, false after `timeoutMs`. For start-up (so the first requests already
 * share state) and tests; the store works, on local state, before that too.
 */
export function waitUntilUp(store: Store, timeoutMs: number): Promise<boolean> {
  if (store.isUp()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve(store.isUp());
    }, timeoutMs);
    const off = store.onUpChange((up) => {
      if (!up) return;
      clearTimeout(timer);
      off();
      resolve(true);
    });
  });
}
