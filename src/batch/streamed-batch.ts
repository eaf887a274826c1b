/**
 * When and how a batch's answer is streamed (docs/protocol-fidelity.md#streamed-answers): only when one
 * sub-request can carry the whole batch and nothing else needs the whole answer, so writing candidates as they
 * arrive changes nothing but when they are written.
 */
import { performance } from 'node:perf_hooks';
import type { AnswerSink, BatchResult } from '../dispatch/batch-types.js';
import type { Logger } from '../logging.js';
import type { BatchPlan, CompiledRoutes } from '../routing/plan.js';
import type { ReplayLease } from '../state/index.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import { traceResult } from './batch-span.js';
import type { GatewayState } from './gateway-state.js';

/** The header saying how many inputs the response cache answered (docs/cache.md). */
export const CACHE_HITS_HEADER = 'x-gateway-cache-hits';

/** The header a streamed answer sends at its end, as a trailer, for it is known only then. */
/** The gateway's own time on an answer, in milliseconds: a header, or a trailer on a streamed answer. */
export const OVERHEAD_HEADER = 'x-gateway-overhead-ms';

/** The client's response written as it is produced; the HTTP fronts implement it. */
export interface ResponseStream {
  /** 200 without a content-length, with `headers` (content-type is the front's). */
  begin(headers: Record<string, string>): void;
  /** false: the client's buffer is full, wait for onDrain before more. */
  write(b: Buffer): boolean;
  onDrain(fn: () => void): void;
  /** Bytes written and not yet taken by the socket. */
  readonly buffered: number;
  /** The client went away. */
  readonly gone: boolean;
  /** The answer is complete; `trailers` follow it. */
  end(trailers: Record<string, string>): void;
}

/**
 * Whether `plan` may be streamed: every input on a plain backend route with one leg and no shadow. Splits and
 * ensembles are left out because experiment accounting reads every candidate after the batch, shadows because
 * they compare against the whole answer.
 */
export function streamable(compiled: CompiledRoutes, plan: BatchPlan): boolean {
  return plan.inputs.every(
    (p) => p.shadows.length === 0 && p.legs.length === 1 && compiled.routes.find((r) => r.name === p.route)?.kind === 'backend',
  );
}

/**
 * `stream` as the batch writes it: the head goes out with the first byte. A class,
 * not an object literal with getters: those are new functions per batch, and V8 kept such objects (with the
 * response they reach) alive through young-generation GCs until the next full one (docs/performance.md#batches-die-young).
 */
export class StreamSink implements AnswerSink {
  constructor(
    private readonly stream: ResponseStream,
    private readonly requestId: string | undefined,
    /** The response cache's hit count (docs/cache.md), when the agent's gateway has a cache: always 0 here. */
    private readonly cacheHits?: number,
  ) {}

  begin(): void {
    const headers: Record<string, string> = { trailer: OVERHEAD_HEADER };
    if (this.requestId !== undefined) headers['x-request-id'] = this.requestId;
    if (this.cacheHits !== undefined) headers[CACHE_HITS_HEADER] = String(this.cacheHits);
    this.stream.begin(headers);
  }

  write(b: Buffer): boolean {
    return this.stream.write(b);
  }

  onDrain(fn: () => void): void {
    this.stream.onDrain(fn);
  }

  get buffered(): number {
    return this.stream.buffered;
  }

  get gone(): boolean {
    return this.stream.gone;
  }
}

/** What a streamed batch's end reads of the batch. */
interface StreamedEnd {
  t0: number;
  beforeDispatch: number;
  result: BatchResult;
  span: TraceSpan;
  plan: BatchPlan;
  lease: ReplayLease | undefined;
  metrics: GatewayState['metrics'];
  /** Set when the batch line is logged. */
  log: Logger | undefined;
}

/**
 * A streamed batch's end: its candidates were written in order as they came (so the order check holds by
 * construction) and are not held, so the answer is not stored for replay; its overhead goes out as a trailer.
 * Returns that overhead, in milliseconds.
 */
export function endStreamed(stream: ResponseStream, e: StreamedEnd, fields: () => Record<string, unknown>): number {
  const { result } = e;
  const overheadMs = e.beforeDispatch - e.t0 + result.workMs;
  e.metrics.overhead.observe(overheadMs / 1000);
  if (e.span.recording) traceResult(e.span, e.plan, result, overheadMs);
  if (e.lease !== undefined) e.metrics.replay.inc({ outcome: 'too_large' });
  e.log?.info(
    {
      ...fields(),
      candidates: result.streamed,
      streamed: true,
      backends: result.backends,
      error_codes: result.errorCodes,
      duration_ms: Math.round(performance.now() - e.t0),
      overhead_ms: Math.round(overheadMs * 100) / 100,
    },
    'batch',
  );
  stream.end({ [OVERHEAD_HEADER]: overheadMs.toFixed(2) });
  return overheadMs;
}
