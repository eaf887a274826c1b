/**
 * One batch's stages after its body is read (docs/architecture.md#the-life-of-a-batch), as one object that holds
 * what they share: the request, its deadline and abort signal, the replay lease, the client's permit.
 *
 *   replay    a re-sent identical batch answered from the store, or waited for (docs/deployment.md)
 *   client    the client's limits (docs/operations.md#client-keys): wait for room, or answer error candidates
 *   plan      routes, experiments' trajectory members, the response cache (docs/cache.md)
 *   dispatch  the sub-requests (dispatch/batch.ts), streamed to the client when the plan allows; shadows detached
 *   finish    ONE ending whatever the answer's shape: order check, replay store, overhead metric, span, the
 *             console's record and the `batch` log line, then the answer (or the streamed answer's end)
 *
 * handle-batch.ts runs them in this order; `close` gives back what the batch held, however it ended.
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
import { batchLogLine, batchRecord, logsInfo, type BatchLogIds } from './batch-log.js';
import { streamable } from './streamed-batch.js';
import type { GatewayState } from './gateway-state.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../logging.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { BudgetHold } from '../memory/budget.js';
import type { ResponseStream } from './streamed-batch.js';
import type { ReadBody } from './read-batch.js';

/** What the HTTP layer hands over: the body as received, the headers, and how to learn the client left. */
export interface BatchExchange {
  /**
   * The virtual agent the batch was sent to (`/agents/<name>/v1/responses`, docs/routing.md#virtual-agents); undefined
   * for the default agent at `/v1/responses`. A name the config does not have is answered 404.
   */
  agent?: string;
  /** As received: one Buffer, or its chunks when it came without a length (joined where it is read). */
  body: Buffer;
  headers: IncomingHttpHeaders;
  log: Logger;
  /** Calls `fn` if the client closes the connection before the answer is written; returns the unregister. */
  onClientGone(fn: () => void): () => void;
  /** The client's name when clients are configured (docs/operations.md#client-keys); its limits apply to this batch. */
  client?: string | undefined;
  /** How the front writes an answer as it is produced, when it can (docs/protocol-fidelity.md#streamed-answers). */
  stream?: ResponseStream;
  /**
   * The batch's hold on the memory budget (docs/memory-budget.md), its body already counted; the objects built
   * over the body and the backends' answers are added to it. The front gives it back once the answer is written.
   */
  memory?: BudgetHold;
}

export interface BatchAnswer {
  status: 200 | 400 | 404 | 422;
  /**
   * JSON text, or a 200 answer in pieces (protocol/answer/answer-body.ts) the fronts write with backpressure: an
   * answer may be larger than a string can hold.
   */
  body: string | AnswerBody;
  requestId?: string;
  /** The gateway's own time on this batch (its time minus the backends'), set on 200 answers. */
  overheadMs?: number;
  replayHit?: boolean;
  /** Inputs the response cache answered (docs/cache.md); undefined when the gateway has no cache. */
  cacheHits?: number;
  /** The answer was written to the exchange's stream, end included: the front writes nothing more. */
  streamed?: boolean;
}

/** What the plan stage decided, for dispatch and finish. */
interface Planned {
  plan: BatchPlan;
  /** The plan dispatched: without the inputs the cache answered. */
  dispatched: BatchPlan;
  steps: Awaited<ReturnType<GatewayState['experiments']['begin']>>;
  cache: CacheLookup | undefined;
}

/** What one batch is made of once its body is read (a replay hash the read did not make is made here). */
interface BatchParts extends ReadBody {
  runtime: GatewayRuntime;
  agent: CompiledAgent;
  gw: GatewayState;
  ex: BatchExchange;
  span: TraceSpan;
  headers: CorrelationHeaders;
  ids: BatchLogIds;
  /** When the batch's body was taken (performance.now()). */
  t0: number;
  /** Ends the batch's keep on its memory hold (handle-batch.ts); called once, when no holder is left. */
  letGo: () => void;
}

export class BatchCycle {
  private readonly deadline: number;
  /** Not an AbortController: see src/abort.ts. Aborted by the deadline or the client leaving. */
  private readonly signal = new BatchSignal();
  private clientGone = false;
  private readonly unlistenGone: () => void;
  private readonly deadlineTimer: NodeJS.Timeout;
  private lease: ReplayLease | undefined;
  private permit: Granted | undefined;
  /** Holders of the batch's keep: the cycle until close, the response cache's copies until they are made. */
  private keepers = 1;

  constructor(private readonly b: BatchParts) {
    this.deadline = Date.now() + b.runtime.config.request_timeout_s * 1000;
    this.unlistenGone = b.ex.onClientGone(() => {
      this.clientGone = true;
      this.signal.abort();
    });
    // The batch deadline aborts whatever is still waiting (a replay wait, a permit queue, backend calls).
    this.deadlineTimer = setTimeout(() => this.signal.abort(), this.deadline - Date.now());
  }

  private get requestId(): string {
    return this.b.headers['x-request-id'];
  }

  /**
   * Idempotent replay (docs/deployment.md#several-gateway-replicas-redis): a re-sent identical batch is answered
   * from the stored response, and one still being computed (here or on another replica) is waited for instead
   * of computed twice. Undefined: compute it.
   */
  async replay(): Promise<BatchAnswer | undefined> {
    const { runtime, agent, gw, request, span, ex } = this.b;
    if (runtime.config.state.replay_ttl_s <= 0) return undefined;
    // Per agent: the same batch sent to two agents is two computations (their routes differ). The default
    // agent's key is the request_id alone, as before virtual agents existed.
    const replayId = agent.virtual ? `agents/${agent.name}/${request.request_id}` : request.request_id;
    const begin = await gw.store.replayBegin(replayId, this.b.rawHash ?? hashBody(this.b.raw), this.signal);
    if (begin.kind === 'hit') {
      gw.metrics.replay.inc({ outcome: 'hit' });
      span.event(EVENT_REPLAY_HIT);
      if (logsInfo(ex.log)) ex.log.info({ ...this.b.ids, agent: agent.name, inputs: request.inputs.length }, 'batch replayed');
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

  /** The client's limits (docs/operations.md#client-keys): after replay, which costs no backend anything. */
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
      { ...this.b.ids, client: ex.client, limit: admitted.limit, waited_ms: Math.round(admitted.waitedMs), inputs: request.inputs.length, candidates: refused.outputs.length },
      'batch over its client limits',
    );
    return { status: 200, body: answerBody(refused.outputs), requestId: this.requestId };
  }

  /** Routes, the experiments' trajectory members (decided before dispatch writes them), the response cache. */
  async plan(): Promise<Planned> {
    const { runtime, agent, gw, request, ex } = this.b;
    const compiled = agent.routes;
    // Tags on experiment routes are followed only when the gateway signed them (docs/experiments.md#signed-tags).
    const tags = compiled.routes.some((r) => r.kind !== 'backend') ? await gw.experiments.tagSigner() : undefined;
    const plan = planBatch(request, compiled, runtime.upstreams, { headers: ex.headers, tags });
    // The inputs the cache answers are neither dispatched nor shadowed (docs/cache.md).
    const cache = gw.cache === undefined ? undefined : await CacheLookup.begin(gw.cache, compiled, runtime.upstreams, request, plan, ex.client);
    // The trajectory members of the candidates' tags, decided before dispatch writes them, knowing which steps
    // the cache answers and what produced them (docs/experiments.md#replays-and-resumed-episodes).
    const steps = await gw.experiments.begin(compiled, request, plan, ex.headers[CHECK_HEADER] !== undefined, cache?.found);
    cache?.answer(request, plan, compiled.memoryKey);
    return { plan, dispatched: cache?.dispatchPlan ?? plan, steps, cache };
  }

  /** The sub-requests, and the shadows detached beside them; then the one ending. */
  async dispatch(p: Planned): Promise<BatchAnswer> {
    const { runtime, agent, gw, request, ex, span } = this.b;
    const compiled = agent.routes;
    const beforeDispatch = performance.now();
    const deps = { upstreams: runtime.upstreams, metrics: gw.metrics, log: ex.log, agent: compiled.agent, memoryKey: compiled.memoryKey };
    const stream = ex.stream !== undefined && streamable(compiled, p.dispatched) ? ex.stream : undefined;
    stream?.describe(this.requestId, p.cache?.hits);
    const batch = runBatch({ ...deps, budget: runtime.budget, permits: gw.store }, request, p.dispatched, {
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
      // Detached: the answer never waits for a shadow (see dispatch/shadow.ts).
      void startShadows({ ...deps, limiter: runtime.shadows, memory: gw.memory }, request, p.dispatched, batch.then((r) => r.outputs), this.b.headers, span);
    }
    const result = await batch;
    return this.finish(p, result, beforeDispatch);
  }

  /**
   * The one ending. A streamed answer's candidates were written in order as they came (the order check holds
   * by construction) and are not held, so it is not stored for replay; its overhead goes out as a trailer.
   */
  private finish(p: Planned, result: BatchResult, beforeDispatch: number): BatchAnswer {
    const { agent, gw, request, ex, span } = this.b;
    gw.experiments.recordBatch(agent.routes, request, p.plan, result, p.steps);
    // The copies are made after the answer is written: the batch's bytes are kept until then.
    p.cache?.store(request, result, ex.log, gw.memory, this.shareKeep());
    const streamed = result.streamed !== undefined && ex.stream !== undefined;
    const t2 = performance.now();
    let body: BatchAnswer['body'] = '';
    if (!streamed) {
      // Checked against the request before it is sent, every time (docs/protocol-fidelity.md#the-path-of-a-batch).
      const problem = validateAgainstRequest(request, result.outputs);
      if (problem !== undefined) throw new GatewayError('GATEWAY_ERR_RESPONSE_ORDER', `assembled response violates the contract order: ${problem}`);
      body = answerBody(result.outputs);
    }
    const overheadMs = beforeDispatch - this.b.t0 + result.workMs + (streamed ? 0 : performance.now() - t2);
    gw.metrics.overhead.observe(overheadMs / 1000);
    if (span.recording) traceResult(span, p.plan, result, overheadMs);
    if (streamed) {
      if (this.lease !== undefined) gw.metrics.replay.inc({ outcome: 'too_large' });
    } else if (typeof body !== 'string') this.storeReplay(body, result);
    this.record(p, result, overheadMs, streamed);
    const answer: BatchAnswer = { status: 200, body, requestId: this.requestId, overheadMs, cacheHits: p.cache?.hits };
    if (!streamed) return answer;
    ex.stream?.end(overheadMs);
    return { ...answer, streamed: true };
  }

  /**
   * The answer kept for replay, in the background: the client's answer never waits on the store. An answer
   * holding the gateway's own failures is not stored: replaying it would serve a transient failure (a backend
   * restarting) to a retry made after the backend recovered; the lease is abandoned in `close`, so a duplicate
   * waiting for it computes instead.
   */
  private storeReplay(body: Exclude<BatchAnswer['body'], string>, result: BatchResult): void {
    const { gw, ex, runtime } = this.b;
    if (this.lease === undefined || hasGatewayError(result.errorCodes)) return;
    const tooLarge = body.length > runtime.config.state.replay_max_bytes;
    if (tooLarge) gw.metrics.replay.inc({ outcome: 'too_large' });
    // The store's copy of the answer (a joined Buffer on its way to Redis) counts under the memory budget
    // until the store has it; with no room now it is not made (docs/memory-budget.md#what-is-counted).
    const copy = tooLarge ? undefined : gw.memory.reserve(body.length);
    if (tooLarge) return;
    if (copy === undefined) {
      gw.metrics.replay.inc({ outcome: 'memory_budget' });
      return;
    }
    const done = this.lease;
    this.lease = undefined;
    done
      .finish(body)
      .catch((err: unknown) => ex.log.warn({ err }, 'replay store failed'))
      .finally(() => copy.release());
  }

  /** The console's recent batches (batch/activity.ts) and the `batch` log line, from one record. */
  private record(p: Planned, result: BatchResult, overheadMs: number, streamed: boolean): void {
    const { agent, gw, request, ex, raw } = this.b;
    const record = batchRecord({
      request, agent: agent.name, client: ex.client, plan: p.plan, result,
      durationMs: performance.now() - this.b.t0, overheadMs, cacheHits: p.cache?.hits, inputsKept: gw.current.config.admin.batch_inputs_kept,
    });
    gw.activity.recordBatch(record);
    // Guarded: building the line (route counts, rounding) costs time even when the level drops it.
    if (!logsInfo(ex.log)) return;
    ex.log.info(
      batchLogLine(this.b.ids, record, {
        clientWaitMs: this.permit?.waitedMs,
        bodyBytes: raw.length,
        cacheHits: p.cache?.hits,
        streamed,
      }),
      'batch',
    );
  }

  /** Whatever the batch ended with: its permit, its timer, its client listener, and a lease not finished. */
  close(): void {
    this.permit?.release();
    clearTimeout(this.deadlineTimer);
    this.unlistenGone();
    // A batch that did not complete lets a waiting duplicate compute instead of waiting for nothing.
    if (this.lease !== undefined) void this.lease.abandon().catch(() => undefined);
    this.dropKeep();
  }

  private shareKeep(): () => void {
    this.keepers++;
    return () => this.dropKeep();
  }

  private dropKeep(): void {
    if (--this.keepers === 0) this.b.letGo();
  }
}

function hasGatewayError(codes: Record<string, number>): boolean {
  for (const code in codes) if (isGatewayErrorCode(code)) return true;
  return false;
}
