/**
 * One batch's stages after its body is read, in order: replay, client limits, plan, dispatch, then ONE ending
 * whatever the answer's shape (docs/architecture.md#the-life-of-a-batch). `close` gives back what it held.
 */
import { performance } from 'node:perf_hooks';
import { BatchSignal } from '../abort.js';
import { mbToBytes } from '../config/schema.js';
import { runBatch, type BatchResult } from '../dispatch/batch.js';
import { startShadows } from '../dispatch/shadow.js';
import { CacheLookup } from '../cache/cache-lookup.js';
import { answerBody } from '../dispatch/answer-bytes.js';
import { validateAgainstRequest } from '../protocol/answer/response-check.js';
import type { CorrelationHeaders } from '../protocol/correlation.js';
import { planBatch, type BatchPlan } from '../routing/plan.js';
import { CHECK_HEADER } from '../experiments/recorder.js';
import type { GatewayRuntime } from '../runtime.js';
import type { CompiledAgent } from '../routing/agents.js';
import { hashBody, type ReplayLease } from '../state/index.js';
import { GatewayError, isGatewayErrorCode } from '../errors.js';
import { EVENT_REPLAY_CONFLICT, EVENT_REPLAY_HIT } from '../tracing/attributes.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import { traceResult } from './batch-span.js';
import type { Granted } from '../clients/client-limiter.js';
import { admitClient, overloadedOutputs } from './client-admission.js';
import { batchLogLine, logsInfo, type BatchLogIds } from './batch-log.js';
import { consoleRecord } from './batch-record.js';
import { streamable, type ResponseStream } from './streamed-batch.js';
import type { GatewayState } from './gateway-state.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../logging.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { BudgetHold } from '../memory/budget.js';
import type { ReadBody } from './read-batch.js';

export interface BatchExchange {
  /** Undefined for the default agent. */
  agent?: string;
  body: Buffer;
  headers: IncomingHttpHeaders;
  log: Logger;
  onClientGone(fn: () => void): () => void;
  client?: string | undefined;
  stream?: ResponseStream;
  /** Its body counted; the front gives it back once the answer is written. */
  memory?: BudgetHold;
}

export interface BatchAnswer {
  status: 200 | 400 | 404 | 422;
  body: string | AnswerBody;
  requestId?: string;
  /** Set on 200 answers. */
  overheadMs?: number;
  replayHit?: boolean;
  cacheHits?: number;
  /** Written to the exchange's stream, end included: the front writes nothing more. */
  streamed?: boolean;
}

interface Planned {
  plan: BatchPlan;
  dispatched: BatchPlan;
  steps: Awaited<ReturnType<GatewayState['experiments']['begin']>>;
  cache: CacheLookup | undefined;
}

interface BatchParts extends ReadBody {
  runtime: GatewayRuntime;
  agent: CompiledAgent;
  gw: GatewayState;
  ex: BatchExchange;
  span: TraceSpan;
  headers: CorrelationHeaders;
  ids: BatchLogIds;
  t0: number;
}

export class BatchCycle {
  private readonly deadline: number;
  private readonly signal = new BatchSignal();
  private clientGone = false;
  private readonly unlistenGone: () => void;
  private readonly deadlineTimer: NodeJS.Timeout;
  private lease: ReplayLease | undefined;
  private permit: Granted | undefined;

  constructor(private readonly b: BatchParts) {
    this.deadline = Date.now() + b.runtime.config.request_timeout_s * 1000;
    this.unlistenGone = b.ex.onClientGone(() => {
      this.clientGone = true;
      this.signal.abort();
    });
    this.deadlineTimer = setTimeout(() => this.signal.abort(), this.deadline - Date.now());
  }

  private get requestId(): string {
    return this.b.headers['x-request-id'];
  }

  async replay(): Promise<BatchAnswer | undefined> {
    const { runtime, agent, gw, request, span, ex } = this.b;
    if (runtime.config.state.replay_ttl_s <= 0) return undefined;
    // Per agent: the same batch sent to two agents is two computations (their routes differ).
    const replayId = agent.virtual ? `agents/${agent.name}/${request.request_id}` : request.request_id;
    const begin = await gw.store.replay.begin(replayId, this.b.rawHash ?? hashBody(this.b.raw), this.signal);
    if (begin.kind === 'hit') {
      gw.metrics.replay.inc({ outcome: 'hit' });
      span.event(EVENT_REPLAY_HIT);
      if (logsInfo(ex.log)) ex.log.info(Object.assign({}, this.b.ids, { agent: agent.name, inputs: request.inputs.length }), 'batch replayed');
      return { status: 200, body: begin.body, requestId: this.requestId, replayHit: true };
    }
    if (begin.kind === 'conflict') {
      gw.metrics.replayConflicts.inc();
      span.event(EVENT_REPLAY_CONFLICT);
    }
    if (begin.kind === 'compute') {
      gw.metrics.replay.inc({ outcome: 'miss' });
      this.lease = begin.lease;
    }
    return undefined;
  }

  async admitClient(): Promise<BatchAnswer | undefined> {
    const { runtime, agent, gw, request, ex } = this.b;
    if (ex.client === undefined || !gw.clients.limited(ex.client)) return undefined;
    const admitted = await admitClient(gw, ex.client, request, this.deadline, this.signal);
    if (admitted.ok) {
      this.permit = admitted;
      return undefined;
    }
    const refused = overloadedOutputs(runtime, agent.routes, gw, request, ex.headers, ex.client, admitted);
    ex.log.info(
      Object.assign({}, this.b.ids, { client: ex.client, limit: admitted.limit, waited_ms: Math.round(admitted.waitedMs), inputs: request.inputs.length, candidates: refused.outputs.length }),
      'batch over its client limits',
    );
    return { status: 200, body: answerBody(refused.outputs), requestId: this.requestId };
  }

  async plan(): Promise<Planned> {
    const { runtime, agent, gw, request, ex } = this.b;
    const compiled = agent.routes;
    // Tags on experiment routes are followed only when the gateway signed them (docs/experiments.md#signed-tags).
    const tags = compiled.routes.some((r) => r.kind !== 'backend') ? await gw.experiments.tagSigner() : undefined;
    const plan = planBatch(request, compiled, runtime.upstreams, { headers: ex.headers, tags });
    const cache = gw.cache === undefined ? undefined : await CacheLookup.begin(gw.cache, compiled, runtime.upstreams, request, plan, ex.client);
    // Decided before dispatch writes the tags (docs/experiments.md#replays-and-resumed-episodes).
    const steps = await gw.experiments.begin(compiled, request, plan, ex.headers[CHECK_HEADER] !== undefined, cache?.found);
    cache?.answer(request, plan, compiled.memoryKey);
    return { plan, dispatched: cache?.dispatchPlan ?? plan, steps, cache };
  }

  async dispatch(p: Planned): Promise<BatchAnswer> {
    const { runtime, agent, gw, request, ex, span } = this.b;
    const compiled = agent.routes;
    const beforeDispatch = performance.now();
    const deps = { upstreams: runtime.upstreams, metrics: gw.metrics, log: ex.log, agent: compiled.agent, memoryKey: compiled.memoryKey };
    const stream = ex.stream !== undefined && streamable(compiled, p.dispatched) ? ex.stream : undefined;
    stream?.describe(this.requestId, p.cache?.hits);
    const batch = runBatch(Object.assign({ budget: runtime.budget, permits: gw.store.permits }, deps), request, p.dispatched, {
      deadline: this.deadline,
      headers: this.b.headers,
      signal: this.signal,
      clientGone: () => this.clientGone,
      requestBody: request.repeatedKeys === true ? undefined : this.b.raw,
      span,
      memory: ex.memory,
      stream: stream === undefined ? undefined : { overBytes: mbToBytes(runtime.config.server.stream_answers_over_mb), sink: stream },
      cached: p.cache?.cached,
    });
    if (p.dispatched.inputs.some((x) => x.shadows.length > 0)) {
      void startShadows(Object.assign({ limiter: runtime.shadows, memory: gw.memory }, deps), request, p.dispatched, batch.then((r) => r.outputs), this.b.headers, span);
    }
    return this.finish(p, await batch, beforeDispatch);
  }

  /** A streamed answer's candidates are not held: no order check (it holds by construction), no replay entry. */
  private finish(p: Planned, result: BatchResult, beforeDispatch: number): BatchAnswer {
    const { agent, gw, request, ex, span } = this.b;
    const streamed = result.streamed !== undefined && ex.stream !== undefined;
    const t2 = performance.now();
    let body: BatchAnswer['body'] = '';
    if (!streamed) {
      const problem = validateAgainstRequest(request, result.outputs);
      if (problem !== undefined) throw new GatewayError('GATEWAY_ERR_RESPONSE_ORDER', `assembled response violates the contract order: ${problem}`);
      body = answerBody(result.outputs);
    }
    const overheadMs = beforeDispatch - this.b.t0 + result.workMs + (streamed ? 0 : performance.now() - t2);
    gw.metrics.overhead.observe(overheadMs / 1000);
    if (span.recording) traceResult(span, p.plan, result, overheadMs);
    let kept = false;
    if (streamed) {
      if (this.lease !== undefined) gw.metrics.replay.inc({ outcome: 'too_large' });
    } else if (typeof body !== 'string') kept = this.storeReplay(body, result);
    // An answer its client left before having it is neither counted nor cached, unless a retry gets it from replay.
    const delivered = !this.clientGone || kept;
    gw.experiments.recordBatch(agent.routes, request, p.plan, result, p.steps, delivered);
    // The copies are made after the answer is written: the batch's bytes are kept until then.
    if (delivered) p.cache?.store(request, result, ex.log, gw.memory, ex.memory?.keep());
    this.record(p, result, overheadMs, streamed);
    const answer: BatchAnswer = { status: 200, body, requestId: this.requestId, overheadMs, cacheHits: p.cache?.hits };
    if (!streamed) return answer;
    ex.stream?.end(overheadMs);
    return Object.assign(answer, { streamed: true });
  }

  /** True once stored. An answer holding the gateway's own failures is not: a retry after recovery would get them again. */
  private storeReplay(body: Exclude<BatchAnswer['body'], string>, result: BatchResult): boolean {
    const { gw, ex, runtime } = this.b;
    if (this.lease === undefined || Object.keys(result.errorCodes).some(isGatewayErrorCode)) return false;
    const tooLarge = body.length > runtime.config.state.replay_max_bytes;
    if (tooLarge) gw.metrics.replay.inc({ outcome: 'too_large' });
    // The store's copy (its own store, or a Buffer for Redis) is counted until it is kept (docs/memory-budget.md#what-is-counted).
    const copy = tooLarge ? undefined : gw.memory.reserve(body.length);
    if (tooLarge) return false;
    if (copy === undefined) {
      gw.metrics.replay.inc({ outcome: 'memory_budget' });
      return false;
    }
    const done = this.lease;
    this.lease = undefined;
    done
      .finish(body)
      .catch((err: unknown) => ex.log.warn({ err }, 'replay store failed'))
      .finally(() => copy.release());
    return true;
  }

  private record(p: Planned, result: BatchResult, overheadMs: number, streamed: boolean): void {
    const { agent, gw, request, ex, raw } = this.b;
    const record = consoleRecord({
      request, agent: agent.name, client: ex.client ?? null, plan: p.plan, result,
      durationMs: performance.now() - this.b.t0, overheadMs, cacheHits: p.cache?.hits, inputsKept: gw.current.config.admin.batch_inputs_kept,
    });
    gw.activity.recordBatch(record);
    // Building the line costs time even when the level drops it.
    if (!logsInfo(ex.log)) return;
    const extras = { clientWaitMs: this.permit?.waitedMs, bodyBytes: raw.length, cacheHits: p.cache?.hits, streamed };
    ex.log.info(batchLogLine(this.b.ids, record, extras), 'batch');
  }

  close(): void {
    this.permit?.release();
    clearTimeout(this.deadlineTimer);
    this.unlistenGone();
    // A batch that did not complete lets a waiting duplicate compute instead of waiting for nothing.
    if (this.lease !== undefined) void this.lease.abandon().catch(() => undefined);
  }
}
