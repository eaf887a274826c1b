/** The gateway's infrastructure as one named Fastify plugin, created at start and closed on shutdown. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { mbToBytes, type GatewayConfig } from '../config/schema.js';
import { Activity } from '../batch/activity.js';
import { Pulse, sharedPulse } from '../batch/pulse.js';
import { ClientLimits } from '../clients/client-limits.js';
import { ExperimentHistory } from '../experiments/report/history.js';
import { Experiments } from '../experiments/recorder.js';
import { MemoryBudget, memoryBudgetSource } from '../memory/budget.js';
import { GatewayMetrics } from '../metrics.js';
import { GatewayRuntime } from '../runtime.js';
import { createStore } from '../state/index.js';
import { ResponseCache } from '../cache/response-cache.js';
import { logStartSummary } from './start-summary.js';
import type { GatewayState } from '../batch/gateway-state.js';

declare module 'fastify' {
  interface FastifyInstance {
    gateway: GatewayState;
  }
}

interface GatewayPluginOptions {
  config: GatewayConfig;
  version: string;
  configPath?: string;
  loadConfig?: () => GatewayConfig;
  /** Wait for the first probe round before serving (tests and the CLI do; it makes /health truthful at once). */
  probeOnStart?: boolean;
  defaultMetrics?: boolean;
}

async function gatewayPlugin(app: FastifyInstance, opts: GatewayPluginOptions): Promise<void> {
  const metrics = new GatewayMetrics({
    defaultMetrics: opts.defaultMetrics,
    latencyBucketsS: opts.config.metrics.latency_buckets_s,
    version: opts.version,
  });
  const store = createStore(opts.config.state, app.log);
  metrics.bindStore(store);
  // Derived once at start when the config leaves it out; a reload that sets the key changes it.
  const derived = memoryBudgetSource(opts.config.server.memory_budget_mb);
  const budgetBytes = (): number => {
    const mb = state.current.config.server.memory_budget_mb;
    return mb === undefined ? derived.bytes : mbToBytes(mb);
  };

  if (derived.source !== 'config') app.log.info({ memory_budget_mb: Math.round(derived.bytes / 2 ** 20), from: derived.source }, 'memory budget derived');
  const state: GatewayState = {
    current: new GatewayRuntime(opts.config, metrics, app.log, store, opts.version),
    metrics,
    version: opts.version,
    configPath: opts.configPath,
    loadConfig: opts.loadConfig,
    store,
    cache: opts.config.cache === undefined ? undefined : new ResponseCache(opts.config.cache, store, metrics.registry),
    experiments: new Experiments(() => state, app.log),
    history: new ExperimentHistory(() => state, app.log),
    activity: new Activity(() => state.current.config.admin.recent_batches),
    pulse: new Pulse({
      metrics,
      batches: () => state.activity.recorded,
      settings: () => ({ intervalS: state.current.config.admin.pulse_interval_s, points: state.current.config.admin.pulse_points }),
      log: app.log,
      // Shared only when the store is (Redis): the memory store is this process's own, like the ring.
      sink: store.kind === 'redis' ? sharedPulse(store) : undefined,
    }),
    clients: new ClientLimits(opts.config.clients, {
      waited: (client, limit) => metrics.clientLimitWaits.inc({ client, limit }),
      waitEnded: (client, seconds) => metrics.clientLimitWait.observe({ client }, seconds),
      refused: (client, limit) => metrics.clientLimitOverloaded.inc({ client, limit }),
    }),
    memory: new MemoryBudget({
      limit: budgetBytes,
      timeoutMs: () => state.current.config.server.admission_timeout_s * 1000,
      onWaited: (seconds) => metrics.admissionWait.observe(seconds),
      shadowShare: () => state.current.config.server.memory_shadow_share,
      onShed: () => metrics.shadowsShed.inc(),
    }),
  };
  metrics.memorySource = state.memory;
  metrics.clientLimitsSource = state.clients;
  metrics.storeUp.set(state.store.isUp() ? 1 : 0);
  state.store.onUpChange((up) => metrics.storeUp.set(up ? 1 : 0));
  app.decorate('gateway', state);
  app.addHook('onReady', async () => {
    // Before listening, even when the probes are not waited for: the first batch is traced when tracing is on.
    await state.current.startTracing();
    const first = state.current.start();
    state.history.start();
    void state.pulse.sample(); // the baseline: the first point comes one interval later
    state.pulse.start();
    if (opts.probeOnStart !== false) await first;
  });
  app.addHook('onListen', async () => logStartSummary(app, opts.probeOnStart !== false));
  app.addHook('onClose', async () => {
    state.history.stop();
    state.pulse.stop();
    await state.current.close();
    await state.store.close();
  });
}

export default fp(gatewayPlugin, { name: 'magma-gateway', fastify: '5.x' });
