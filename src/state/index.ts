/**
 * Shared state of the gateway (the `state` config key, docs/deployment.md#several-gateway-replicas-redis): createStore picks
 * the in-memory store, or the Redis store
 * when `state.redis` is configured. Callers see one interface (types.ts) either way.
 */
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { StateConfig, StateLog, Store } from './types.js';

export type { Permit, ReplayLease, Store } from './types.js';
export { hashBody } from '../protocol/body-hash.js';

export function createStore(config: StateConfig, log: StateLog): Store {
  return config.redis === undefined ? new MemoryStore(config, log) : new RedisStore(config, log);
}
