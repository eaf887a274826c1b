/**
 * One sub-request (docs/protocol-fidelity.md#the-path-of-a-batch). Counted in flight for the retry budget until
 * its answer is handled, so a failover that follows starts after the permit and the budget slot are given back.
 */
import { performance } from 'node:perf_hooks';
import { withTraceparent } from '../protocol/correlation.js';
import type { IndexedCandidate, Slot } from '../protocol/answer/response-check.js';
import { subRequestBody } from '../protocol/request/sub-request.js';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import { postResponses } from '../upstream/post-responses.js';
import type { Replica } from '../upstream/replica.js';
import type { Permit } from '../state/index.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import { checkAnswerYielding } from '../reader/reader.js';
import { attemptAttributes, attemptSpanName, endAttemptSpan } from './attempt-span.js';
import type { BatchContext, DispatchDeps } from './batch-types.js';
import type { MetricsBatchObserver } from './batch-observer.js';
import { coversRequest, type Item } from './batch-item.js';
import { MIN_ATTEMPT_MS, type Unserved } from './failover.js';
import type { StreamedAnswer } from './streamed-answer.js';
import type { StreamOutcome } from './candidate-stream.js';

export interface BatchInputs {
  readonly request: IndexedAgentRequest;
  readonly requestBody: Buffer | undefined;
}

export type AttemptResult = {
  workMs: number;
} & (
  | { kind: 'answered'; ms: number; rows: Slot<IndexedCandidate>[][] }
  /** Aborted by the gateway, not failed by the backend. */
  | { kind: 'aborted'; ms: number; clientGone: boolean }
  | { kind: 'unserved'; why: Unserved<Replica> }
  | { kind: 'streamed'; ms: number; written: number }
);

export class Attempt {
  private workMs = 0;
  /** Only when the batch's span is recorded. */
  private span: TraceSpan | undefined;
  private outcome: string | undefined;
  private status: number | undefined;
  private reason: string | undefined;
  private wireMs: number | undefined;

  constructor(
    private readonly deps: Pick<DispatchDeps, 'upstreams' | 'budget' | 'permits' | 'log' | 'memoryKey'>,
    private readonly observer: MetricsBatchObserver,
    private readonly batch: BatchInputs,
    private readonly ctx: BatchContext,
    readonly replica: Replica,
    readonly items: readonly Item[],
    /** Replicas of this backend already refused for these items (this one excluded). */
    private readonly tried: ReadonlySet<Replica> | undefined,
    private readonly stream?: StreamedAnswer,
  ) {}

  async run(): Promise<AttemptResult> {
    const { upstreams, budget, permits } = this.deps;
    const replica = this.replica;
    const parent = this.ctx.span;
    if (parent?.recording === true) {
      this.span = parent.client(attemptSpanName(replica), attemptAttributes(replica, this.items, this.tried !== undefined));
    }
    budget.attemptStarted();
    let permit: Permit | undefined;
    try {
      const limit = upstreams.limitOf(replica.backend);
      if (limit !== undefined) {
        permit = await permits.acquire(`permit:${replica.backend}:${replica.url}`, limit.max, {
          signal: this.ctx.signal,
          timeoutMs: Math.min(limit.queueMs ?? Infinity, Math.max(0, this.ctx.deadline - Date.now() - MIN_ATTEMPT_MS)),
        });
        if (permit === undefined) {
          const message = `replica ${replica.id} is at max_in_flight ${limit.max} and no permit came free in time`;
          this.ended('gateway_overloaded', undefined, message);
          return this.unserved({ kind: 'unsent', failure: { code: 'gateway_overloaded', message } });
        }
      }
      return await this.send();
    } finally {
      permit?.release();
      budget.attemptEnded();
      if (this.span !== undefined) endAttemptSpan(this.span, this.outcome, this.status, this.reason);
    }
  }

  /** Undefined when it never reached the wire (no permit). */
  get call(): { outcome: string; ms: number } | undefined {
    return this.outcome === undefined || this.wireMs === undefined ? undefined : { outcome: this.outcome, ms: this.wireMs };
  }

  private ended(outcome: string, ms: number | undefined, reason?: string): void {
    this.outcome = outcome;
    this.reason = reason;
    this.wireMs = ms;
    this.observer.attemptEnded(this.replica.backend, outcome, ms);
  }

  private unserved(why: Unserved<Replica>): AttemptResult {
    return { kind: 'unserved', why, workMs: this.workMs };
  }

  private async send(): Promise<AttemptResult> {
    const { upstreams, log } = this.deps;
    const { replica, items, ctx } = this;
    const t0 = performance.now();
    const body = this.body();
    this.workMs += performance.now() - t0;
    const timeoutMs = Math.min(upstreams.timeoutMs(replica.backend), ctx.deadline - Date.now());
    const nInputs = items.length;
    upstreams.attemptStarted(replica, nInputs);
    const started = performance.now();
    const headers = withTraceparent(ctx.headers, (this.span ?? ctx.span)?.traceparent);
    const stream = this.stream;
    const overBytes = ctx.stream?.overBytes;
    const tap = stream === undefined || overBytes === undefined ? undefined : { overBytes, tap: stream };
    let res = await postResponses(replica, { body, headers, timeoutMs, signal: ctx.signal, stream: tap, memory: ctx.memory });
    const ms = performance.now() - started;
    upstreams.attemptEnded(replica, nInputs);
    this.status = res.status;

    const run = stream?.started;
    if (run !== undefined) {
      const outcome = await run.finish(res.ok ? undefined : res.failure);
      this.workMs += outcome.workMs;
      if (outcome.committed) return this.streamed(res.ok && outcome.broke !== undefined ? { ok: false, failure: outcome.broke } : res, ms, outcome);
      if (res.ok) {
        // The answer ended but never began for the client: it went away, or the answer was refused whole.
        if (outcome.refused === undefined) return { kind: 'aborted', ms, clientGone: true, workMs: this.workMs };
        res = { ok: false, status: res.status, failure: { code: 'gateway_backend_invalid_response', message: outcome.refused } };
      }
    }

    if (!res.ok && ctx.signal?.aborted === true) {
      // A client that went away is not the replica's fault; a deadline that ran out is.
      const gone = ctx.clientGone?.() === true;
      this.ended(gone ? 'cancelled' : 'gateway_backend_timeout', ms, gone ? 'the client closed the connection' : 'the batch deadline ran out');
      if (!gone) upstreams.recordFailure(replica, 'the batch deadline ran out');
      return { kind: 'aborted', ms, clientGone: gone, workMs: this.workMs };
    }
    if (!res.ok) {
      this.ended(res.failure.code, ms, res.failure.message);
      log.warn(
        { backend: replica.backend, replica: replica.id, code: res.failure.code, reason: res.failure.message, inputs: nInputs },
        'backend sub-request failed',
      );
      if (res.failure.notSent) {
        upstreams.recordConnectFailure(replica, res.failure.message);
        return this.unserved({ kind: 'refused', failure: res.failure, backend: replica.backend, tried: new Set(this.tried).add(replica) });
      }
      // A client's refusal, the gateway's own memory budget and an unasked 100 Continue (undici refuses the
      // interim, docs/limits-and-edges.md#1xx-answers-from-backends) say nothing of the replica's health.
      const blameless = res.failure.code === 'gateway_backend_rejected' || res.failure.code === 'gateway_memory_budget' || res.unaskedContinue === true;
      if (!blameless) upstreams.recordFailure(replica, res.failure.message);
      return this.unserved({ kind: 'failed', failure: res.failure });
    }

    const t1 = performance.now();
    const inputs = items.map((it) => ({ id: it.input.id, count: it.count }));
    const shape = { requestId: this.batch.request.request_id, inputs };
    const rows = await checkAnswerYielding(res.bytes, shape, replica.maxJsonDepth, this.deps.memoryKey, replica.maxMemoryKeyRepeats);
    this.workMs += performance.now() - t1;
    if (!rows.ok) {
      this.ended('gateway_backend_invalid_response', ms, rows.reason);
      upstreams.recordFailure(replica, rows.reason);
      log.warn({ backend: replica.backend, replica: replica.id, reason: rows.reason }, 'backend answer invalid');
      return this.unserved({ kind: 'failed', failure: { code: 'gateway_backend_invalid_response', message: rows.reason } });
    }
    const bad = badCandidates(rows.slots);
    if (bad.count > 0) this.partlyInvalid(ms, bad, 'backend answer partly invalid: its good candidates are kept');
    else {
      this.ended('ok', ms);
      upstreams.recordSuccess(replica, ms);
    }
    return { kind: 'answered', ms, rows: rows.slots, workMs: this.workMs };
  }

  /** A short answer, or one with invalid candidates, is the backend's fault even when its good ones are kept. */
  private partlyInvalid(ms: number, bad: { count: number; reason: string }, message: string, written?: number): void {
    const { replica } = this;
    this.ended('gateway_backend_invalid_response', ms, bad.reason);
    this.deps.upstreams.recordFailure(replica, bad.reason);
    const code = 'gateway_backend_invalid_response';
    const fields = { backend: replica.backend, replica: replica.id, code, candidates: bad.count, reason: bad.reason.slice(0, 512) };
    this.deps.log.warn(written === undefined ? fields : Object.assign({}, fields, { written }), message);
  }

  /** The batch is answered whatever happened to the backend after the stream began. */
  private streamed(res: Awaited<ReturnType<typeof postResponses>>, ms: number, { written, bad, heldBack }: StreamOutcome): AttemptResult {
    const { upstreams, log } = this.deps;
    const { replica, ctx } = this;
    const result: AttemptResult = { kind: 'streamed', ms, written, workMs: this.workMs };
    if (res.ok && bad.count > 0) {
      this.partlyInvalid(ms, bad, 'streamed backend answer partly invalid: its good candidates are kept', written);
      return result;
    }
    if (res.ok) {
      this.ended('ok', ms);
      upstreams.recordSuccess(replica, ms);
      return result;
    }
    if (ctx.clientGone?.() === true) {
      this.ended('cancelled', ms, 'the client closed the connection');
      return result;
    }
    this.ended(res.failure.code, ms, res.failure.message);
    // The gateway was not reading the answer when its time ran out: the client's pace, not the replica's health.
    if (!(heldBack && res.failure.code === 'gateway_backend_timeout')) upstreams.recordFailure(replica, res.failure.message);
    log.warn(
      { backend: replica.backend, replica: replica.id, code: res.failure.code, reason: res.failure.message, written },
      'streamed backend answer broke off',
    );
    return result;
  }

  /** The whole client request unchanged is forwarded as its own body: that saves serializing megabytes again. */
  private body(): Buffer {
    const { request, requestBody } = this.batch;
    const items = this.items;
    const whole = requestBody !== undefined && coversRequest(request, items) && items.every((it) => (it.input.raw.index.memoryLayout?.tags.length ?? 0) === 0);
    if (whole) return requestBody;
    return subRequestBody(Buffer.from(JSON.stringify(request.request_id)), items.map((it) => ({ raw: it.input.raw, count: it.count })));
  }
}

function badCandidates(rows: readonly (readonly Slot<unknown>[])[]): { count: number; reason: string } {
  let count = 0;
  let reason: string | undefined;
  for (const row of rows) {
    for (const slot of row) {
      if (slot.ok) continue;
      count++;
      reason ??= slot.reason;
    }
  }
  return { count, reason: reason ?? '' };
}
