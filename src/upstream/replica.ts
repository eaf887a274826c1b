/**
 * One backend replica: its undici Pool (created at start, closed on shutdown), its readiness as the prober and
 * request outcomes see it, and the inputs it has in flight (the sharding balance, docs/gateway-behaviour.md "The path
 * of a batch" step 4).
 */
import { Pool } from 'undici';
import type { AgentInfoParsed } from '../protocol/schemas.js';

export type ReplicaState =
  /** Not probed yet: routed to optimistically only if no replica of the backend is known ready. */
  | 'unknown'
  | 'ready'
  /** /health failed or answered non-2xx. */
  | 'not_ready'
  /** Failed consecutive probes or requests: out of rotation until a probe succeeds and the backoff ends. */
  | 'ejected'
  /**
   * Answers, but not protocol 2.0 or no `inference: true` (docs/agent-contract.md, "Health and identity"): never
   * routed to.
   */
  | 'incompatible';

export interface ReplicaOptions {
  backend: string;
  index: number;
  url: string;
  connectTimeoutMs: number;
  headers: Record<string, string>;
}

export class Replica {
  readonly backend: string;
  readonly index: number;
  readonly url: string;
  readonly origin: string;
  /** Path prefix of the url (a backend mounted under /agent), prepended to every contract path. */
  readonly basePath: string;
  readonly headers: Record<string, string>;
  readonly pool: Pool;

  state: ReplicaState = 'unknown';
  info: AgentInfoParsed | undefined;
  lastProbeAt: number | undefined;
  lastError: string | undefined;
  consecutiveFailures = 0;
  ejections = 0;
  ejectedUntil = 0;
  inFlightInputs = 0;
  inFlightRequests = 0;

  constructor(opts: ReplicaOptions) {
    this.backend = opts.backend;
    this.index = opts.index;
    this.url = opts.url;
    const u = new URL(opts.url);
    this.origin = u.origin;
    this.basePath = u.pathname.replace(/\/+$/, '');
    this.headers = opts.headers;
    this.pool = new Pool(this.origin, {
      // Keep-alive connections reused across batches; enough of them for sub-requests of concurrent batches.
      connections: 64,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      connect: { timeout: opts.connectTimeoutMs },
      // Per-request timeouts are set by each call from the backend's timeout_s and the batch deadline.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /** The label used in metrics and the admin API: `<backend>#<index>`. */
  get id(): string {
    return `${this.backend}#${this.index}`;
  }

  /** Routable now: probed ready (or never probed yet) and not ejected. */
  get routable(): boolean {
    return this.state === 'ready' || this.state === 'unknown';
  }

  path(p: string): string {
    return this.basePath + p;
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  async destroy(): Promise<void> {
    await this.pool.destroy();
  }
}
