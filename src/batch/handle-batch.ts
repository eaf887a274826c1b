/**
 * One AgentRequest -> AgentResponse through the gateway (docs/protocol-fidelity.md#the-path-of-a-batch), independent of the
 * HTTP layer: the raw front (http/batch-front.ts, the hot path) and the fastify route (routes/responses.ts)
 * both call it. Only an invalid request gets an HTTP error (422); backend failures become error candidates
 * (docs/protocol-fidelity.md#failures).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../logging.js';
import { BatchSignal } from '../abort.js';
import { mbToBytes } from '../config/schema.js';
import { readBatchYielding } from './read-batch.js';
import { runBatch } from '../dispatch/batch.js';
import { CACHE_HITS_HEADER, endStreamed, OVERHEAD_HEADER, StreamSink, streamable, type ResponseStream } from './streamed-batch.js';
import { CacheLookup } from '../cache/cache-lookup.js';
import { startShadows } from '../dispatch/shadow.js';
import type { GatewayState } from './gateway-state.js';
import { correlationHeaders } from '../protocol/correlation.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import type { ReceivedBody } from '../protocol/body-bytes.js';
import { answerBody } from '../dispatch/answer-bytes.js';
import { validateAgainstRequest } from '../protocol/answer/response-check.js';
import { planBatch } from '../routing/plan.js';
import { CHECK_HEADER } from '../experiments/recorder.js';
import type { GatewayRuntime } from '../runtime.js';
import { hashBody, type ReplayLease } from '../state/index.js';
import { errorBody, GatewayError } from '../errors.js';
import { EVENT_REPLAY_CONFLICT, EVENT_REPLAY_HIT } from '../tracing/attributes.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import { BATCH_SPAN_ATTRIBUTES, BATCH_SPAN_NAME, traceAnswer, traceRequest, traceResult, traceThrown } from './batch-span.js';
import type { Granted } from '../clients/client-limiter.js';
import { admitClient, overloadedOutputs } from './client-admission.js';
import type { BudgetHold } from '../memory/budget.js';
import { requestObjectsEstimate } from '../memory/estimates.js';
import { ROOT_AGENT } from '../config/schema.js';
import type { CompiledAgent } from '../routing/agents.js';
import { batchLogIds } from './batch-log.js';

/** Every code the gateway itself writes in a candidate starts so (src/errors.ts). */
const GATEWAY_CODE_PREFIX = 'gateway_';

/** What the HTTP layer hands over: the body as received, the headers, and how to learn the client left. */
interface BatchExchange {
  /**
   * The virtual agent the batch was sent to (`/agents/<name>/v1/responses`, docs/routing.md#virtual-agents); undefined
   * for the default agent at `/v1/responses`. A name the config does not have is answered 404.
   */
  agent?: string;
  /** As received: one Buffer, or its chunks when it came without a length (joined where it is read). */
  body: ReceivedBody;
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

/** The answer's headers besides content-type and content-length, the same on both fronts. */
export function answerHeaders(a: BatchAnswer, elapsedMs: number): Record<string, string> {
  const h: Record<string, string> = {
    [OVERHEAD_HEADER]: (a.overheadMs ?? elapsedMs).toFixed(2),
  };
  if (a.requestId !== undefined) h['x-request-id'] = a.requestId;
  if (a.replayHit === true) h['x-gateway-replay'] = 'hit';
  if (a.cacheHits !== undefined) h[CACHE_HITS_HEADER] = String(a.cacheHits);
  return h;
}

export async function handleBatch(gw: GatewayState, ex: BatchExchange): Promise<BatchAnswer> {
  const runtime = gw.current;
  // Held from the first line, before any await: a reload while this batch waits (on the store, on a replay)
  // must not close the pools the batch is about to use. The agent is looked up on the same runtime, so a batch
  // for an agent a reload removes finishes on the old one; the next request gets the 404.
  runtime.enter();
  // The batch's server span (docs/operations.md#tracing); tracing off: the no-op span, and nothing is built for it.
  const span = runtime.tracing.server(BATCH_SPAN_NAME, ex.headers, BATCH_SPAN_ATTRIBUTES);
  try {
    const agent = runtime.agent(ex.agent);
    if (agent === undefined) return unknownAgent(ex.agent);
    const answer = await batchOn(runtime, agent, gw, ex, span);
    if (span.recording) traceAnswer(span, answer.status, answer.replayHit);
    return answer;
  } catch (err) {
    if (span.recording) traceThrown(span, err);
    throw err;
  } finally {
    span.end();
    runtime.leave();
  }
}

/** Longest agent name quoted back in a 404: the name comes from the URL. */
const MAX_QUOTED_NAME = 128;

/** The 404 for a batch sent to an agent the running config does not have (docs/routing.md#virtual-agents). */
export function unknownAgentDetail(name: string | undefined): string {
  if (name === undefined) {
    return 'no default agent is configured: the config has no top-level routes; send batches to /agents/<name>/v1/responses';
  }
  const quoted = JSON.stringify(name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}...` : name);
  if (name === ROOT_AGENT) return `unknown agent ${quoted}: the default agent (the top-level routes) is served at /, not under /agents/`;
  return `unknown agent ${quoted}: no agent of that name is configured under "agents"`;
}

function unknownAgent(name: string | undefined): BatchAnswer {
  return { status: 404, body: JSON.stringify(errorBody('GATEWAY_ERR_UNKNOWN_AGENT', unknownAgentDetail(name))) };
}

async function batchOn(runtime: GatewayRuntime, agent: CompiledAgent, gw: GatewayState, ex: BatchExchange, span: TraceSpan): Promise<BatchAnswer> {
  const t0 = performance.now();
  const { config } = runtime;
  const compiled = agent.routes;
  const { metrics, store } = gw;
  // A large body is read on the reader thread and comes back as `raw` (ex.body is not used after this).
  const { read: parsed, body: raw } = await readBatchYielding(ex.body, config.server, compiled.memoryKey, ex.log);
  if (!parsed.ok) return { status: parsed.status, body: parsed.body };
  const { request } = parsed;
  const { inputs } = request;
  ex.memory?.grow(requestObjectsEstimate(inputs));

  const headers = correlationHeaders(ex.headers);
  if (span.recording) traceRequest(span, request, headers);
  const requestId = headers['x-request-id'];
  const ids = batchLogIds(request.request_id, headers, span.traceparent);
  const deadline = Date.now() + config.request_timeout_s * 1000;
  // Not an AbortController: see src/abort.ts.
  const signal = new BatchSignal();
  let clientGone = false;
  const unlistenGone = ex.onClientGone(() => {
    clientGone = true;
    signal.abort();
  });
  // The batch deadline aborts whatever is still waiting (a replay wait, a permit queue, backend calls).
  const deadlineTimer = setTimeout(() => signal.abort(), deadline - Date.now());

  // Idempotent replay (docs/deployment.md#several-gateway-replicas-redis): a re-sent identical batch is answered from the stored
  // response, and one still being computed (here or on another gateway replica) is waited for instead of
  // computed twice.
  let lease: ReplayLease | undefined;
  let permit: Granted | undefined;
  try {
    if (config.state.replay_ttl_s > 0) {
      // Per agent: the same batch sent to two agents is two computations (their routes differ). The default
      // agent's key is the request_id alone, as before virtual agents existed.
      const replayId = agent.virtual ? `agents/${agent.name}/${request.request_id}` : request.request_id;
      const begin = await store.replayBegin(replayId, hashBody(raw), signal);
      if (begin.kind === 'hit') {
        metrics.replay.inc({ outcome: 'hit' });
        span.event(EVENT_REPLAY_HIT);
        if (logsInfo(ex.log)) ex.log.info({ ...ids, agent: agent.name, inputs: request.inputs.length }, 'batch replayed');
        return { status: 200, body: begin.body, requestId, replayHit: true };
      }
      if (begin.kind === 'conflict') {
        metrics.replayConflicts.inc();
        span.event(EVENT_REPLAY_CONFLICT);
      }
      if (begin.kind === 'compute') {
        metrics.replay.inc({ outcome: 'miss' });
        lease = begin.lease;
      }
    }

    // The client's limits (docs/operations.md#client-keys): after replay, which costs no backend anything.
    if (ex.client !== undefined && gw.clients.limited(ex.client)) {
      const admitted = await admitClient(gw, ex.client, request, deadline, signal);
      if (!admitted.ok) {
        const refused = overloadedOutputs(runtime, compiled, gw, request, ex.headers, ex.client, admitted);
        ex.log.info(
          { ...ids, client: ex.client, limit: admitted.limit, waited_ms: Math.round(admitted.waitedMs), inputs: inputs.length, candidates: refused.outputs.length },
          'batch over its client limits',
        );
        return { status: 200, body: answerBody(refused.outputs), requestId };
      }
      permit = admitted;
    }

    // Tags on experiment routes are followed only when the gateway signed them (docs/experiments.md#signed-tags).
    const tags = compiled.routes.some((r) => r.kind !== 'backend') ? await gw.experiments.tagSigner() : undefined;
    const plan = planBatch(request, compiled, runtime.upstreams, { headers: ex.headers, tags });
    // The response cache (docs/cache.md): the inputs it answers are neither dispatched nor shadowed.
    const cache = gw.cache === undefined ? undefined : await CacheLookup.begin(gw.cache, compiled, runtime.upstreams, request, plan);
    // The trajectory members of the candidates' tags, decided before dispatch writes them, knowing which steps
    // the cache answers and what produced them (docs/experiments.md#replays-and-resumed-episodes).
    const steps = await gw.experiments.begin(compiled, request, plan, ex.headers[CHECK_HEADER] !== undefined, cache?.found);
    cache?.answer(request, plan, compiled.memoryKey);
    const dispatched = cache?.dispatchPlan ?? plan;
    const beforeDispatch = performance.now();
    const deps = { upstreams: runtime.upstreams, metrics, log: ex.log, agent: compiled.agent, memoryKey: compiled.memoryKey };
    const sink = ex.stream !== undefined && streamable(compiled, dispatched) ? new StreamSink(ex.stream, requestId, cache?.hits) : undefined;
    const batch = runBatch(
      { ...deps, budget: runtime.budget, store },
      request,
      dispatched,
      {
        deadline, headers, signal, clientGone: () => clientGone, requestBody: parsed.request.repeatedKeys === true ? undefined : raw, span, memory: ex.memory,
        stream: sink === undefined ? undefined : { overBytes: mbToBytes(config.server.stream_answers_over_mb), sink },
        cached: cache?.cached,
      },
    );
    if (dispatched.inputs.some((p) => p.shadows.length > 0)) {
      // Detached: the answer never waits for a shadow (see dispatch/shadow.ts).
      void startShadows({ ...deps, limiter: runtime.shadows, memory: gw.memory }, request, dispatched, batch.then((r) => r.outputs), headers, span);
    }
    const result = await batch;
    gw.experiments.recordBatch(compiled, request, plan, result, steps);
    cache?.store(request, result, ex.log, gw.memory);
    if (result.streamed !== undefined && ex.stream !== undefined) {
      const overheadMs = endStreamed(ex.stream, { t0, beforeDispatch, result, span, plan, lease, metrics, log: logsInfo(ex.log) ? ex.log : undefined }, () => ({
        ...ids,
        agent: agent.name,
        ...(ex.client === undefined ? {} : { client: ex.client }),
        inputs: request.inputs.length,
        routes: countBy(plan.inputs.map((p) => p.route)),
        body_bytes: raw.length,
      }));
      return { status: 200, body: '', requestId, overheadMs, streamed: true };
    }
    const t2 = performance.now();
    // Checked against the request before it is sent, every time (docs/protocol-fidelity.md#the-path-of-a-batch, step 4).
    const problem = validateAgainstRequest(request, result.outputs);
    if (problem !== undefined) throw new GatewayError('GATEWAY_ERR_RESPONSE_ORDER', `assembled response violates the contract order: ${problem}`);
    const body = answerBody(result.outputs);
    const overheadMs = beforeDispatch - t0 + result.workMs + (performance.now() - t2);
    metrics.overhead.observe(overheadMs / 1000);
    if (span.recording) traceResult(span, plan, result, overheadMs);
    // An answer holding the gateway's own failures is not stored: replaying it would serve a transient
    // failure (a backend restarting) to a retry made after the backend recovered. The lease is abandoned
    // below, so a duplicate waiting for it computes instead.
    if (lease !== undefined && !hasGatewayError(result.errorCodes)) {
      const tooLarge = body.length > config.state.replay_max_bytes;
      if (tooLarge) metrics.replay.inc({ outcome: 'too_large' });
      // The store's copy of the answer (a joined Buffer on its way to Redis) counts under the memory budget
      // until the store has it; with no room now it is not made (docs/memory-budget.md#what-is-counted).
      const copy = tooLarge ? undefined : gw.memory.reserve(body.length);
      if (!tooLarge && copy === undefined) metrics.replay.inc({ outcome: 'memory_budget' });
      else {
        // Stored in the background: the client's answer never waits on the store.
        const done = lease;
        lease = undefined;
        done
          .finish(body)
          .catch((err: unknown) => ex.log.warn({ err }, 'replay store failed'))
          .finally(() => copy?.release());
      }
    }
    const durationMs = Math.round(performance.now() - t0);
    const routes = countBy(plan.inputs.map((p) => p.route));
    // The console's recent batches (batch/activity.ts): counts and names only, never memory or prompts.
    gw.activity.recordBatch({
      request_id: request.request_id, agent: agent.name, client: ex.client ?? null, inputs: request.inputs.length, candidates: result.outputs.length,
      routes, backends: result.backends, error_codes: result.errorCodes, duration_ms: durationMs, overhead_ms: Math.round(overheadMs * 100) / 100,
    });
    // Guarded: building the line (route counts, rounding) costs time even when the level drops it.
    if (logsInfo(ex.log)) {
      ex.log.info(
        {
          ...ids,
          agent: agent.name,
          ...(ex.client === undefined ? {} : { client: ex.client }),
          ...(permit === undefined || permit.waitedMs === 0 ? {} : { client_wait_ms: Math.round(permit.waitedMs) }),
          inputs: request.inputs.length,
          candidates: result.outputs.length,
          routes,
          backends: result.backends,
          error_codes: result.errorCodes,
          duration_ms: durationMs,
          overhead_ms: Math.round(overheadMs * 100) / 100,
          body_bytes: raw.length,
          ...(cache === undefined ? {} : { cache_hits: cache.hits }),
        },
        'batch',
      );
    }
    return { status: 200, body, requestId, overheadMs, cacheHits: cache?.hits };
  } finally {
    permit?.release();
    clearTimeout(deadlineTimer);
    unlistenGone();
    // A batch that did not complete lets a waiting duplicate compute instead of waiting for nothing.
    if (lease !== undefined) void lease.abandon().catch(() => undefined);
  }
}

function hasGatewayError(codes: Record<string, number>): boolean {
  for (const code in codes) if (code.startsWith(GATEWAY_CODE_PREFIX)) return true;
  return false;
}

/** pino's isLevelEnabled, which the Logger interface does not declare. */
function logsInfo(log: Logger): boolean {
  return log.level === 'info' || log.level === 'debug' || log.level === 'trace';
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
