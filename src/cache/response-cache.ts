/** The response cache (docs/cache.md): built once, it outlives reloads like the store holding its entries. */
import type { Registry } from 'prom-client';
import { mbToBytes, type GatewayConfig } from '../config/schema.js';
import type { CacheEntries, CacheStore } from '../state/types.js';
import { CacheMetrics } from './cache-metrics.js';

type CacheConfig = NonNullable<GatewayConfig['cache']>;

/** What an admin DELETE empties: everything, or one agent's entries, one backend's, or both. */
export interface CacheScope {
  agent?: string;
  backend?: string;
}

/** The scope names an entry belongs to, in the order their generations enter its key. */
export const ALL_SCOPE = '*';
export const agentScope = (agent: string): string => `agent:${agent}`;
export const backendScope = (backend: string): string => `backend:${backend}`;

export class ResponseCache {
  readonly entries: CacheEntries;
  readonly metrics: CacheMetrics;
  readonly ttlMs: number;
  readonly maxEntryBytes: number;
  readonly sharedAcrossClients: boolean;

  constructor(config: CacheConfig, store: CacheStore, registry: Registry) {
    this.entries = store.cacheEntries({ capBytes: mbToBytes(config.max_mb) });
    this.metrics = new CacheMetrics(registry, () => this.entries);
    this.ttlMs = config.ttl_s * 1000;
    this.maxEntryBytes = mbToBytes(config.max_entry_mb);
    this.sharedAcrossClients = config.shared_across_clients;
  }

  /** A new generation of `scope`: O(1), on every replica. Rejects while Redis is unavailable. */
  async clear(scope: CacheScope): Promise<string[]> {
    const scopes: string[] = [];
    if (scope.agent !== undefined) scopes.push(agentScope(scope.agent));
    if (scope.backend !== undefined) scopes.push(backendScope(scope.backend));
    if (scopes.length === 0) scopes.push(ALL_SCOPE);
    for (const s of scopes) await this.entries.bump(s);
    return scopes;
  }
}
