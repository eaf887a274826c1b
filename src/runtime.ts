/** Everything built from one config: a batch finishes on the runtime it started on. */
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
import type { StorePorts } from './state/types.js';
import type { TracingConfig } from './tracing/otel-tracing.js';
import { NOOP_TRACING, type Tracing } from './tracing/trace-span.js';
import { ClientTable } from './clients/client-table.js';

export class GatewayRuntime {
  readonly agents: CompiledAgents;
  readonly upstreams: Upstreams;
  readonly prober: Prober;
  readonly budget: RetryBudget;
  readonly shadows: ShadowLimiter;
  /** Undefined without `clients:`. */
  readonly clients: ClientTable | undefined;
  private readonly ejections: SharedEjections | undefined;
  private currentTracing: Tracing = NOOP_TRACING;
  private tracingStarted: Promise<void> | undefined;
  private active = 0;
  private drained: (() => void) | undefined;

  constructor(
    readonly config: GatewayConfig,
    metrics: GatewayMetrics,
    private readonly log: Logger,
    store?: Pick<StorePorts, 'shared'>,
    private readonly version = '0.0.0',
  ) {
    this.agents = compileAgents(config);
    metrics.initSeries(config, routeBackends);
    this.upstreams = new Upstreams(config, metrics);
    this.ejections = store === undefined ? undefined : new SharedEjections(this.upstreams, store.shared, log);
    this.prober = new Prober(this.upstreams, config, metrics, log);
    this.budget = new RetryBudget(config.retry_budget.ratio, config.retry_budget.min);
    this.shadows = new ShadowLimiter(config.shadow_max_in_flight);
    this.clients = config.clients === undefined ? undefined : new ClientTable(config.clients);
  }

  /** The no-op one until startTracing has run. */
  get tracing(): Tracing {
    return this.currentTracing;
  }

  /** Loads the SDK only when tracing is on. Once, however often called. */
  startTracing(): Promise<void> {
    this.tracingStarted ??= loadTracing(this.config.tracing, { version: this.version, log: this.log }).then((t) => {
      this.currentTracing = t;
    });
    return this.tracingStarted;
  }

  agent(name: string | undefined): CompiledAgent | undefined {
    return findAgent(this.agents, name);
  }

  /** Routes none of whose backends has a ready replica: /health is not ready while there is one. */
  routesLackingBackend(agent: CompiledAgent): string[] {
    return routesLacking(agent, (b) => this.upstreams.isReady(b));
  }

  armsLackingReplica(agent: CompiledAgent): string[] {
    return armsLacking(agent, (b) => this.upstreams.isReady(b));
  }

  enter(): void {
    this.active++;
  }

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

  /** Once its batches are done (shadow calls finish first). */
  async close(): Promise<void> {
    this.prober.stop();
    this.ejections?.stop();
    if (this.active > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.upstreams.close();
    await this.tracingStarted?.catch(() => undefined);
    await this.currentTracing.shutdown();
  }
}

/** The SDK is imported only with tracing on: a gateway without it neither loads nor holds a few MB of heap. */
export async function loadTracing(config: TracingConfig, opts: { version: string; log: Logger }): Promise<Tracing> {
  const endpoint = config.otlp_endpoint;
  if (endpoint === undefined) return NOOP_TRACING;
  const otel = await import('./tracing/otel-tracing.js');
  return new otel.OtelTracing({ ...config, otlp_endpoint: endpoint }, opts);
}
