/**
 * The types a batch's dispatch is described by: what it needs (DispatchDeps), what one batch brings
 * (BatchContext) and what it answers (BatchResult). Apart from batch.ts so batch-run.ts, attempt.ts and
 * batch-slots.ts, which batch.ts starts, read them without an import cycle.
 */
import type { Writable } from 'node:stream';
import type { AbortLike } from '../abort.js';
import type { Logger } from '../logging.js';
import type { GatewayMetrics } from '../metrics.js';
import type { AgentOutput } from '../protocol/types.js';
import type { Permits } from '../state/types.js';
import type { AnswerCharge } from '../upstream/call-types.js';
import type { Upstreams } from '../upstream/upstreams.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import type { RetryBudget } from './retry-budget.js';

export interface DispatchDeps {
  upstreams: Upstreams;
  budget: RetryBudget;
  /** Concurrency permits for backends with max_in_flight (cluster-wide with Redis). */
  permits: Permits;
  metrics: GatewayMetrics;
  log: Logger;
  /** The agent the batch was sent to (docs/routing.md#virtual-agents): its metrics' `agent` label. */
  agent: string;
  memoryKey: string;
}

export interface BatchContext {
  /** Epoch ms by which every attempt and fallback must be over (request_timeout_s). */
  deadline: number;
  /** Headers passed to every backend (x-request-id, traceparent). */
  headers: Record<string, string>;
  /** Aborted when the client goes away or the deadline passes. */
  signal?: AbortLike;
  /** True once the client closed its connection (the signal then says nothing of the backend). */
  clientGone?: () => boolean;
  /** The client's request body as received, forwarded as is when a sub-request is the whole request. */
  requestBody?: Buffer;
  /** The batch's server span (docs/operations.md#tracing): each sub-request gets a client span under it. Absent: none. */
  span?: TraceSpan;
  /**
   * Set when the batch may be streamed (docs/protocol-fidelity.md#streamed-answers): a sub-request carrying the
   * whole batch whose answer is longer than `overBytes` is written to `sink` as it arrives.
   */
  stream?: { overBytes: number; sink: AnswerSink };
  /**
   * Candidates the response cache answered, by input index (docs/cache.md): put in their slots as they are, the
   * plan dispatched holding none of these inputs.
   */
  cached?: ReadonlyMap<number, readonly AgentOutput[]>;
  /** The batch's hold on the memory budget (docs/memory-budget.md): its backends' answers are counted there. */
  memory?: AnswerCharge;
}

/** The client's answer as the batch writes it when streamed. */
export interface AnswerSink {
  /** The client's response: the streamed answer's pipeline ends in it, and does not end it. */
  readonly out: Writable;
  /** Called once, before the first byte: the answer is committed (200) from here on. */
  begin(): void;
}

export interface BatchResult {
  outputs: AgentOutput[];
  /** Milliseconds of the gateway's own work inside dispatch (bodies built, answers parsed and checked). */
  workMs: number;
  backends: Record<string, number>;
  errorCodes: Record<string, number>;
  /** Per leg that got an answer (or a final failure): who served it and how long its sub-request took. */
  legs: LegOutcome[];
  /**
   * Every sub-request that ended on the wire, failed and timed-out ones too (a leg's first try before its
   * fallback among them): the experiment report's latency per arm counts them as the Backends page does.
   */
  calls?: CallOutcome[];
  /**
   * The answer was streamed to the context's sink (all but its end): `outputs` is then empty, the candidates
   * went out as they came and this many were written.
   */
  streamed?: number;
  /**
   * Inputs (request positions) whose candidates were served from the response cache: no backend was asked for
   * them, and the experiment recorder counts them as cached steps only, since they were counted when first computed.
   */
  cached?: ReadonlySet<number>;
}

/** One sub-request that ended on the wire: the legs it carried, how it ended (`ok` or a gateway_* code), its wall time. */
export interface CallOutcome {
  backend: string;
  legs: readonly { input: number; route: string; arm?: string }[];
  outcome: string;
  ms: number;
}

export interface LegOutcome {
  input: number;
  backend: string;
  route: string;
  arm?: string;
  /** Wall time of the sub-request that answered this leg; undefined when no request was made. */
  ms?: number;
}
