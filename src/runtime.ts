/**
 * Everything built from one config: every agent's compiled routes, upstream pools, the prober. A batch takes the runtime
 * current when it starts and finishes on it, so a reload (docs/operations.md#hot-reload) swaps in a new runtime without touching
 * batches in flight; the old one closes its pools once they drain.
 */
import type { Logger } from './logging.js';
import type { GatewayConfig } from './config/schema.js';
import type { GatewayMetrics } from './metrics.js';
import { RetryBudget } from './dispatch/retry-budget.js';
import { ShadowLimiter } from './dispatch/shadow.js';
import { armsLacking, compileAgents, findAgent, routesLacking, type CompiledAgent, type CompiledAgents } from './routing/agents.js';
import { routeBackends } from './routing/plan.js';
import { Prober } from './upstream/prober.js';
import { SharedEjections } from './upstream/shared-ejections.js';
import { Upstreams } from './upstream/upstreams.js';
import type { Store } from './state/index.js';
import { loadTracing } from './tracing/load-tracing.js';
import { NOOP_TRACING, type Tracing } from './tracing/trace-span.js';
import { ClientTable } from './clients/client-table.js';

export class GatewayRuntime {
  /** Every agent of the config (docs/routing.md#virtual-agents), each with its compiled routes. */
  readonly agents: CompiledAgents;
  readonly upstreams: Upstreams;
  readonly prober: Prober;
  readonly budget: RetryBudget;
  readonly shadows: ShadowLimiter;
  /** Client keys (docs/operations.md#client-keys); undefined without `clients:`, when every agent endpoint is open. */
  readonly clients: ClientTable | undefined;
  private readonly ejections: SharedEjections | undefined;
  private readonly log: Logger;
  /** Written once, by startTracing. */
  private currentTracing: Tracing = NOOP_TRACING;
  private tracingStarted: Promise<void> | undefined;
  private active = 0;
  private drained: (() => void) | undefined;

  constructor(
    readonly config: GatewayConfig,
    metrics: GatewayMetrics,
    log: Logger,
    store?: Store,
    /** The gateway's version, the traces' service.version. */
    private readonly version = '0.0.0',
  ) {
    this.agents = compileAgents(config);
    metrics.initSeries(config, routeBackends);
    this.upstreams = new Upstreams(config, metrics);
    this.ejections = store === undefined ? undefined : new SharedEjections(this.upstreams, store, log);
    this.prober = new Prober(this.upstreams, config, metrics, log);
    this.budget = new RetryBudget(config.retry_budget.ratio, config.retry_budget.min);
    this.shadows = new ShadowLimiter(config.shadow_max_in_flight);
    this.clients = config.clients === undefined ? undefined : new ClientTable(config.clients);
    this.log = log;
  }

  /**
   * This config's tracing (docs/operations.md#tracing): the no-op one until startTracing has run, and for good unless
   * tracing.otlp_endpoint is set.
   */
  get tracing(): Tracing {
    return this.currentTracing;
  }

  /** Build the tracing (loading the SDK only when tracing is on); before serving. Once, however often called. */
  startTracing(): Promise<void> {
    this.tracingStarted ??= loadTracing(this.config.tracing, { version: this.version, log: this.log }).then((t) => {
      this.currentTracing = t;
    });
    return this.tracingStarted;
  }

  /** The agent a request is for (undefined: the default agent at `/`); undefined when there is none such. */
  agent(name: string | undefined): CompiledAgent | undefined {
    return findAgent(this.agents, name);
  }

  /** Routes of `agent` none of whose backends has a ready replica: its /health is not ready while there is one. */
  routesLackingBackend(agent: CompiledAgent): string[] {
    return routesLacking(agent, (b) => this.upstreams.isReady(b));
  }

  /** Arms of `agent`'s all_arms_ready splits with no ready replica (`<route>: <arm>`): its /health is not ready while there is one. */
  armsLackingReplica(agent: CompiledAgent): string[] {
    return armsLacking(agent, (b) => this.upstreams.isReady(b));
  }

  /** Count a batch in flight on this runtime. */
  enter(): void {
    this.active++;
  }

  /** Batches in flight on this runtime (the console's overview). */
  get inFlight(): number {
    return this.active;
  }

  leave(): void {
    this.active--;
    if (this.active === 0 && this.drained) this.drained();
  }

  async start(): Promise<void> {
    await this.startTracing();
    await this.ejections?.start();
    await this.prober.start();
  }

  /**
   * Stop probing, wait for batches in flight on this runtime, close its pools (shadow calls finish first), then
   * flush its spans and stop its tracing.
   */
  async close(): Promise<void> {
    this.prober.stop();
    this.ejections?.stop();
    if (this.active > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.upstreams.close();
    await this.tracingStarted?.catch(() => undefined);
    await this.currentTracing.shutdown();
  }
}
