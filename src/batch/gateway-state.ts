/**
 * What every batch and every admin view reads: the runtime current now (swapped by a reload, docs/operations.md#hot-reload),
 * and the pieces that outlive a reload (metrics, store, experiment accounting). Built by the gateway
 * plugin (plugins/gateway.ts); defined here so the batch core needs nothing from the HTTP layer.
 */
import type { Activity } from './activity.js';
import type { Pulse } from './pulse.js';
import type { ClientLimits } from '../clients/client-limits.js';
import type { ExperimentHistory } from '../experiments/report/history.js';
import type { Experiments } from '../experiments/recorder.js';
import type { MemoryBudget } from '../memory/budget.js';
import type { GatewayMetrics } from '../metrics.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Store } from '../state/types.js';
import type { ResponseCache } from '../cache/response-cache.js';

export interface GatewayState {
  current: GatewayRuntime;
  metrics: GatewayMetrics;
  version: string;
  configPath: string | undefined;
  /**
   * Shared state (docs/deployment.md#several-gateway-replicas-redis): in memory by default, Redis when `state.redis`
   * is configured. Every port (state/types.ts); each consumer is handed the ones it uses.
   */
  store: Store;
  /** A/B and ensemble accounting into the store's counters (docs/operations.md#experiment-report). */
  experiments: Experiments;
  /** The response cache (docs/cache.md); undefined without the top-level `cache` config. Kept across reloads. */
  cache: ResponseCache | undefined;
  /** Per-client limits (docs/operations.md#client-keys), by client name, kept across reloads (reload.ts reconfigures it). */
  clients: ClientLimits;
  /** Recent batches, batch rate, start time and last reload, for the console (docs/console.md). */
  activity: Activity;
  /** Batches/s, errors/s, overhead and per-backend latency over the last hour, for the console (batch/pulse.ts). */
  pulse: Pulse;
  /** Snapshots of the experiment report over time, in the store (experiments/history.ts). */
  history: ExperimentHistory;
  /** The one memory budget (docs/memory-budget.md): every batch's bytes are held on it. */
  memory: MemoryBudget;
}
