/**
 * What every batch and every admin view reads: the runtime current now (swapped by a reload, README "Hot
 * reload"), and the pieces that outlive a reload (metrics, store, experiment accounting). Built by the gateway
 * plugin (plugins/gateway.ts); defined here so the batch core needs nothing from the HTTP layer.
 */
import type { ClientLimits } from '../clients/client-limits.js';
import type { Experiments } from '../experiments/recorder.js';
import type { MemoryBudget } from '../memory/budget.js';
import type { GatewayMetrics } from '../metrics.js';
import type { GatewayRuntime } from '../runtime.js';
import type { Store } from '../state/index.js';

export interface GatewayState {
  current: GatewayRuntime;
  metrics: GatewayMetrics;
  version: string;
  configPath: string | undefined;
  /** Shared state (README "Several gateway replicas (Redis)"): in memory by default, Redis when `state.redis` is configured. */
  store: Store;
  /** A/B and ensemble accounting into the store's counters (README "Execution feedback and the experiment report"). */
  experiments: Experiments;
  /** Per-client limits (README "Client keys"), by client name, kept across reloads (reload.ts reconfigures it). */
  clients: ClientLimits;
  /** The one memory budget (docs/memory-budget.md): every batch's bytes are held on it. */
  memory: MemoryBudget;
}
