/** The response cache's Prometheus series (docs/cache.md#metrics); every label set is bounded. */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CacheEntries } from '../state/types.js';

/** docs/cache.md#what-is-stored-and-what-is-never-cached */
export type BypassReason = 'off' | 'sampling' | 'ensemble' | 'unprobed' | 'identity_mixed';

const STORE_FAILURES = ['unavailable', 'too_large', 'unstorable'] as const;

export class CacheMetrics {
  readonly hits: Counter<'agent' | 'route'>;
  readonly misses: Counter<'agent' | 'route'>;
  readonly bypasses: Counter<'agent' | 'route' | 'reason'>;
  readonly stores: Counter<'agent' | 'route'>;
  readonly storeFailures: Counter<'reason'>;
  readonly storedBytes: Counter;

  constructor(registry: Registry, entries: () => CacheEntries) {
    const registers = [registry];
    this.hits = new Counter({ name: 'magma_gateway_cache_hits_total', help: 'Inputs answered from the response cache, by agent and route.', labelNames: ['agent', 'route'] as const, registers });
    this.misses = new Counter({ name: 'magma_gateway_cache_misses_total', help: 'Cacheable inputs not found in the cache (a store failure on read counts here too).', labelNames: ['agent', 'route'] as const, registers });
    this.bypasses = new Counter({
      name: 'magma_gateway_cache_bypasses_total',
      help: 'Inputs of a cached agent not looked up, by reason: off, sampling, ensemble, unprobed, identity_mixed.',
      labelNames: ['agent', 'route', 'reason'] as const,
      registers,
    });
    this.stores = new Counter({ name: 'magma_gateway_cache_stores_total', help: 'Inputs whose candidates were stored in the cache.', labelNames: ['agent', 'route'] as const, registers });
    this.storeFailures = new Counter({
      name: 'magma_gateway_cache_store_failures_total',
      help: 'Inputs that could have been stored and were not: unavailable (Redis), too_large (cache.max_entry_mb), unstorable, memory_budget (no room for the copy).',
      labelNames: ['reason'] as const,
      registers,
    });
    this.storedBytes = new Counter({ name: 'magma_gateway_cache_stored_bytes_total', help: 'Bytes of entries stored.', registers });
    new Gauge({
      name: 'magma_gateway_cache_bytes',
      help: 'Bytes of entries this process holds (the memory cache, bounded by cache.max_mb; 0 with Redis).',
      registers,
      collect(): void {
        this.set(entries().held().bytes);
      },
    });
    new Gauge({
      name: 'magma_gateway_cache_entries',
      help: 'Entries this process holds (the memory cache; 0 with Redis).',
      registers,
      collect(): void {
        this.set(entries().held().entries);
      },
    });
    new Counter({
      name: 'magma_gateway_cache_evictions_total',
      help: 'Entries the memory cache dropped to stay under cache.max_mb (least recently used first).',
      registers,
      collect(): void {
        this.reset();
        this.inc(entries().held().evicted);
      },
    });
    for (const reason of STORE_FAILURES) this.storeFailures.inc({ reason }, 0);
  }
}
