/** A batch's dispatch types, apart from batch.ts so the files it starts read them without an import cycle. */
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
  permits: Permits;
  metrics: GatewayMetrics;
  log: Logger;
  agent: string;
  memoryKey: string;
}

export interface BatchContext {
  /** Epoch ms (request_timeout_s). */
  deadline: number;
  headers: Record<string, string>;
  signal?: AbortLike;
  /** When the signal fired because the client left, it says nothing of the backend. */
  clientGone?: () => boolean;
  requestBody?: Buffer;
  span?: TraceSpan;
  /** A sub-request carrying the whole batch whose answer is longer than `overBytes` is written to `sink` as it arrives. */
  stream?: { overBytes: number; sink: AnswerSink };
  /** By input index; the plan dispatched holds none of these inputs. */
  cached?: ReadonlyMap<number, readonly AgentOutput[]>;
  memory?: AnswerCharge;
}

export interface AnswerSink {
  /** The client's response: the pipeline does not end it. */
  readonly out: Writable;
  /** Called once, before the first byte: the answer is committed (200) from here on. */
  begin(): void;
}

export interface BatchResult {
  outputs: AgentOutput[];
  workMs: number;
  backends: Record<string, number>;
  errorCodes: Record<string, number>;
  legs: LegOutcome[];
  /** Failed and timed-out ones too: the experiment report's latency per arm counts them as the Backends page does. */
  calls?: CallOutcome[];
  /** Candidates written to the context's sink; `outputs` is then empty. */
  streamed?: number;
  cached?: ReadonlySet<number>;
}

/** One sub-request that ended on the wire: `outcome` is `ok` or a gateway_* code. */
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
  ms?: number;
}
