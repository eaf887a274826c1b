/** One backend replica: its undici Pool and a read-only view of the record Upstreams alone writes (upstreams.ts). */
import { Pool } from 'undici';
import { DEFAULT_MAX_RESPONSE_MB, mbToBytes } from '../config/schema.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../protocol/json/json-depth.js';
import { DEFAULT_MAX_MEMORY_KEY_REPEATS } from '../protocol/request/protocol-walker.js';
import type { AgentInfo } from '../protocol/types.js';
import type { BackendTlsOptions } from '../config/tls-files.js';

/** The states and their moves: docs/operations.md#probing-and-ejection. */
export type ReplicaState = 'unknown' | 'ready' | 'not_ready' | 'ejected' | 'incompatible';

export interface ReplicaRecord {
  state: ReplicaState;
  info: AgentInfo | undefined;
  lastError: string | undefined;
  consecutiveFailures: number;
  /** Ejections not yet forgiven: the next one lasts probe_interval_s doubled this many times. */
  ejections: number;
  ejectedUntil: number;
  /** Epoch ms when the replica last came back from an ejection: forgiveness counts healthy time from here. */
  healthySince: number;
  inFlightInputs: number;
  inFlightRequests: number;
}

export function freshRecord(): ReplicaRecord {
  return {
    state: 'unknown',
    info: undefined,
    lastError: undefined,
    consecutiveFailures: 0,
    ejections: 0,
    ejectedUntil: 0,
    healthySince: 0,
    inFlightInputs: 0,
    inFlightRequests: 0,
  };
}

interface ReplicaOptions {
  backend: string;
  index: number;
  url: string;
  connectTimeoutMs: number;
  headers: Record<string, string>;
  maxResponseBytes?: number;
  maxJsonDepth?: number;
  maxMemoryKeyRepeats?: number;
  tls?: BackendTlsOptions;
}

export class Replica {
  readonly backend: string;
  readonly index: number;
  readonly url: string;
  readonly origin: string;
  /** A backend mounted under /agent. */
  readonly basePath: string;
  readonly headers: Record<string, string>;
  readonly maxResponseBytes: number;
  /** Also for the node:http transport that reads past an unasked `100 Continue` (read-past-continue.ts). */
  readonly tls: BackendTlsOptions | undefined;
  readonly maxJsonDepth: number;
  /** server.max_memory_key_repeats, for its answers' memories. */
  readonly maxMemoryKeyRepeats: number;
  readonly pool: Pool;

  constructor(
    opts: ReplicaOptions,
    private readonly record: Readonly<ReplicaRecord> = freshRecord(),
  ) {
    this.backend = opts.backend;
    this.index = opts.index;
    this.url = opts.url;
    const u = new URL(opts.url);
    this.origin = u.origin;
    this.basePath = u.pathname.replace(/\/+$/, '');
    this.headers = opts.headers;
    this.maxResponseBytes = opts.maxResponseBytes ?? mbToBytes(DEFAULT_MAX_RESPONSE_MB);
    this.maxJsonDepth = opts.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
    this.maxMemoryKeyRepeats = opts.maxMemoryKeyRepeats ?? DEFAULT_MAX_MEMORY_KEY_REPEATS;
    this.tls = opts.tls;
    this.pool = new Pool(this.origin, {
      // Keep-alive connections reused across batches; enough of them for sub-requests of concurrent batches.
      connections: 64,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      connect: { timeout: opts.connectTimeoutMs, ...opts.tls },
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  get id(): string {
    return `${this.backend}#${this.index}`;
  }

  get state(): ReplicaState {
    return this.record.state;
  }

  get info(): AgentInfo | undefined {
    return this.record.info;
  }

  get lastError(): string | undefined {
    return this.record.lastError;
  }

  get consecutiveFailures(): number {
    return this.record.consecutiveFailures;
  }

  get ejections(): number {
    return this.record.ejections;
  }

  get ejectedUntil(): number {
    return this.record.ejectedUntil;
  }

  get healthySince(): number {
    return this.record.healthySince;
  }

  /** Inputs in its sub-requests in flight: the sharding balance. */
  get inFlightInputs(): number {
    return this.record.inFlightInputs;
  }

  get inFlightRequests(): number {
    return this.record.inFlightRequests;
  }

  path(p: string): string {
    return this.basePath + p;
  }
}
