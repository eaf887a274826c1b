/**
 * The response cache of a gateway (docs/cache.md): built once from the top-level `cache` config, it outlives
 * reloads like the store it keeps its entries in (this process's memory, or Redis shared by every replica).
 * Each batch looks its inputs up through a CacheLookup (cache-lookup.ts); the admin DELETE empties it here.
 */
import type { Registry } from 'prom-client';
import { mbToBytes, type GatewayConfig } from '../config/schema.js';
import type { CacheEntries, CacheStore } from '../state/types.js';
import { CacheMetrics } from './cache-metrics.js';

export type CacheConfig = NonNullable<GatewayConfig['cache']>;

/** What an admin DELETE empties: everything, one agent's entries, one backend's, or those of both. */
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
  /** Entries read by every client rather than only the one that caused them (docs/cache.md#clients). */
  readonly sharedAcrossClients: boolean;

  constructor(config: CacheConfig, store: CacheStore, registry: Registry) {
    this.entries = store.cacheEntries({ capBytes: mbToBytes(config.max_mb) });
    this.metrics = new CacheMetrics(registry, () => this.entries);
    this.ttlMs = config.ttl_s * 1000;
    this.maxEntryBytes = mbToBytes(config.max_entry_mb);
    this.sharedAcrossClients = config.shared_across_clients;
  }

  /**
   * Empties `scope`: a new generation of it, so no entry stored before is read again (O(1), on every replica
   * sharing the Redis). Agent and backend together empty both. Rejects while Redis is unavailable.
   */
  async clear(scope: CacheScope): Promise<string[]> {
    const scopes: string[] = [];
    if (scope.agent !== undefined) scopes.push(agentScope(scope.agent));
    if (scope.backend !== undefined) scopes.push(backendScope(scope.backend));
    if (scopes.length === 0) scopes.push(ALL_SCOPE);
    for (const s of scopes) await this.entries.bump(s);
    return scopes;
  }
}
