/** The gateway's shared state (docs/deployment.md#several-gateway-replicas-redis): in memory, or in `state.redis`. */
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { StateConfig, StateLog, Store } from './types.js';

export type { Permit, ReplayLease, Store } from './types.js';
export { hashBody } from '../protocol/body-hash.js';

export function createStore(config: StateConfig, log: StateLog): Store {
  return config.redis === undefined ? new MemoryStore(config, log) : new RedisStore(config, log);
}
