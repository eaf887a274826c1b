/**
 * What every batch and admin view reads: the runtime current now (a reload swaps it) and the pieces that outlive
 * a reload. Built by plugins/gateway.ts; defined here so the batch core needs nothing from the HTTP layer.
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
import type { GatewayConfig } from '../config/schema.js';

export interface GatewayState {
  current: GatewayRuntime;
  metrics: GatewayMetrics;
  version: string;
  configPath: string | undefined;
  /** Reads the config for a reload as the start read it; undefined: the file at configPath alone. */
  loadConfig?: () => GatewayConfig;
  /** In memory, or Redis with `state.redis` (docs/deployment.md#several-gateway-replicas-redis). */
  store: Store;
  experiments: Experiments;
  /** Undefined without the top-level `cache` config. */
  cache: ResponseCache | undefined;
  clients: ClientLimits;
  activity: Activity;
  pulse: Pulse;
  history: ExperimentHistory;
  memory: MemoryBudget;
}
