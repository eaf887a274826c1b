/**
 * Executing a batch plan (README "What happens to a batch"): legs grouped per backend and sharded over its
 * replicas, one sub-request per replica, all in parallel; answers mapped back onto (input, candidate) slots;
 * failures moved along the route's fallback list while the deadline allows, then turned into error candidates in
 * place. Nothing here throws for a backend's sake: the batch always completes.
 */
import type { AbortLike } from '../abort.js';
import { performance } from 'node:perf_hooks';
// Aliased so this file's body is unchanged: any logger with pino's methods (src/logging.ts).
import type { Logger as FastifyBaseLogger } from '../logging.js';
import type { AttemptFailure } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { parseExact, stringifyExact } from '../protocol/exact-json.js';
import { checkSubResponse } from '../protocol/response-check.js';
import type { AgentInput, AgentOutput, AgentRequest, JsonObject } from '../protocol/types.js';
import type { BatchPlan, MemoryTag } from '../routing/plan.js';
import { postResponses } from '../upstream/backend-call.js';
import type { Replica } from '../upstream/replica.js';
import type { Upstreams } from '../upstream/upstreams.js';
import { errorCandidate, fromBackend, stripMemoryKey } from './candidates.js';
import type { RetryBudget } from './retry-budget.js';
import type { Permit, Store } from '../state/index.js';

export interface DispatchDeps {
  upstreams: Upstreams;
  budget: RetryBudget;
  /** Concurrency permits for backends with max_in_flight (cluster-wide with Redis). */
  store: Store;
  metrics: GatewayMetrics;
  log: FastifyBaseLogger;
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
}

/** One leg of one input on its way to a backend. */
interface Item {
  input: number;
  backend: string;
  count: number;
  offset: number;
  fallbacks: string[];
  route: string;
  arm?: string;
}

/**
 * Why a sub-request left its items unserved. `failed`: the backend received them and failed, so moving them on
 * is a retry. `refused`: no connection could be made. `unsent`: no permit came free. Neither of the last two
 * reached a backend, so moving their items on is no retry.
 */
type Unserved = { kind: 'failed' | 'refused' | 'unsent'; failure: AttemptFailure };

/** Below this much time left, no new attempt starts: it could not finish. */
const MIN_ATTEMPT_MS = 50;

export interface BatchResult {
  outputs: AgentOutput[];
  /** True when some value holds number markers: serialize with stringifyExact. */
  marked: boolean;
  /** Milliseconds of the gateway's own work inside dispatch (bodies built, answers parsed and checked). */
  workMs: number;
  backends: Record<string, number>;
  errorCodes: Record<string, number>;
  /** Per leg that got an answer (or a final failure): who served it and how long its sub-request took. */
  legs: LegOutcome[];
}

export interface LegOutcome {
  input: number;
  backend: string;
  route: string;
  arm?: string;
  /** Wall time of the sub-request that answered this leg; undefined when no request was made. */
  ms?: number;
}

export async function runBatch(
  deps: DispatchDeps,
  request: AgentRequest,
  plan: BatchPlan,
  ctx: BatchContext,
  requestMarked: boolean,
): Promise<BatchResult> {
  const { upstreams, metrics, memoryKey } = deps;
  const inputs = request.inputs;
  const stripped: JsonObject[] = inputs.map((inp) => stripMemoryKey(inp.memory, memoryKey));
  const slots: AgentOutput[][] = inputs.map((inp) => new Array<AgentOutput>(inp.num_outputs as number));
  const result: BatchResult = { outputs: [], marked: requestMarked, workMs: 0, backends: {}, errorCodes: {}, legs: [] };

  const tagOf = (it: Item): MemoryTag =>
    it.arm === undefined ? { backend: it.backend, route: it.route } : { backend: it.backend, route: it.route, arm: it.arm };

  const fail = (items: Item[], f: AttemptFailure, ms?: number): void => {
    for (const it of items) {
      const input = inputs[it.input]!;
      result.legs.push({ input: it.input, backend: it.backend, route: it.route, arm: it.arm, ms });
      for (let c = 0; c < it.count; c++) {
        slots[it.input]![it.offset + c] = errorCandidate(
          request.request_id, input, it.offset + c, f.code, f.message, it.backend, memoryKey, tagOf(it),
        );
      }
      count(result.errorCodes, f.code, it.count);
      metrics.candidates.inc({ route: it.route, backend: it.backend, status: 'error' }, it.count);
      metrics.candidateErrors.inc({ backend: it.backend, code: f.code }, it.count);
    }
  };

  /**
   * Move items to their next fallback backend, or fill error candidates with `f`. A fallback starts only when
   * the batch deadline leaves at least the fallback backend's usual latency (one deadline covers every attempt,
   * README "Deadline and retry budget"). `retry`: the items failed on a backend that received them, so moving
   * them is a retry and needs the retry budget; otherwise (their backend had no replica to take them) it is not.
   */
  const moveOn = async (items: Item[], f: AttemptFailure, retry: boolean): Promise<void> => {
    const next = new Map<string, { from: Item; moved: Item }[]>();
    const final: Item[] = [];
    let lateMsg: string | undefined;
    for (const it of items) {
      const to = it.fallbacks[0];
      if (to === undefined || ctx.signal?.aborted === true) {
        final.push(it);
        continue;
      }
      const remaining = ctx.deadline - Date.now();
      if (remaining <= Math.max(MIN_ATTEMPT_MS, upstreams.expectedMs(to))) {
        lateMsg = `${f.message}; no fallback: ${Math.max(0, Math.round(remaining))} ms left of the batch deadline`;
        final.push(it);
        continue;
      }
      const pair = { from: it, moved: { ...it, backend: to, fallbacks: it.fallbacks.slice(1) } };
      const list = next.get(to);
      if (list) list.push(pair);
      else next.set(to, [pair]);
    }
    if (final.length > 0) fail(final, lateMsg === undefined ? f : { ...f, message: lateMsg });
    const jobs: Promise<void>[] = [];
    for (const [to, group] of next) {
      if (retry && !deps.budget.tryRetry()) {
        metrics.retryBudgetExhausted.inc({ backend: to });
        fail(group.map((p) => p.from), { ...f, message: `${f.message}; no fallback: retry budget exhausted` });
        continue;
      }
      for (const p of group) metrics.fallbacks.inc({ route: p.from.route, from: p.from.backend, to });
      const moved = dispatch(group.map((p) => p.moved));
      jobs.push(retry ? moved.finally(() => deps.budget.retryDone()) : moved);
    }
    await Promise.all(jobs);
  };

  /**
   * Items bound for `backend`, sharded over its routable replicas not in `tried`. With none left, the backend
   * is not attempted: the items move straight on, which is not a retry. `cause` is why earlier replicas were
   * left (a refused connection), the answer when nothing else can take the items.
   */
  const toBackend = (backend: string, items: Item[], tried?: ReadonlySet<Replica>, cause?: AttemptFailure): Promise<void> => {
    const shards = upstreams.shard(backend, items.length, tried);
    if (shards.length === 0) {
      return moveOn(items, cause ?? { code: 'gateway_no_backend', message: `backend "${backend}" has no ready replica` }, false);
    }
    const jobs: Promise<void>[] = [];
    let at = 0;
    for (const { replica, count: n } of shards) {
      if (tried !== undefined) metrics.retries.inc({ backend });
      jobs.push(send(replica, items.slice(at, at + n), tried));
      at += n;
    }
    return Promise.all(jobs).then(() => undefined);
  };

  const send = async (replica: Replica, items: Item[], tried: ReadonlySet<Replica> | undefined): Promise<void> => {
    if (ctx.deadline - Date.now() <= 0) {
      // No time for this attempt, hence none for a fallback either: the items fail here.
      await moveOn(items, { code: 'gateway_backend_timeout', message: 'the batch deadline (request_timeout_s) ran out' }, false);
      return;
    }
    const next = await subRequest(replica, items);
    // Moving on happens here, after the sub-request's permit and budget slot are given back.
    if (next === undefined) return;
    if (next.kind === 'refused') await toBackend(replica.backend, items, new Set(tried).add(replica), next.failure);
    else await moveOn(items, next.failure, next.kind === 'failed');
  };

  /**
   * One sub-request, counted in flight for the retry budget from the moment it waits for a permit
   * (max_in_flight: as long as the queue timeout and the batch deadline allow) until its answer is handled.
   * Returns how it failed, if it did, for the caller to move its items on.
   */
  const subRequest = async (replica: Replica, items: Item[]): Promise<Unserved | undefined> => {
    deps.budget.attemptStarted();
    let permit: Permit | undefined;
    try {
      const limit = upstreams.limitOf(replica.backend);
      if (limit !== undefined) {
        permit = await deps.store.acquire(`permit:${replica.backend}:${replica.url}`, limit.max, {
          signal: ctx.signal,
          timeoutMs: Math.min(limit.queueMs ?? Infinity, Math.max(0, ctx.deadline - Date.now() - MIN_ATTEMPT_MS)),
        });
        if (permit === undefined) {
          metrics.backendRequests.inc({ backend: replica.backend, outcome: 'gateway_overloaded' });
          const message = `replica ${replica.id} is at max_in_flight ${limit.max} and no permit came free in time`;
          return { kind: 'unsent', failure: { code: 'gateway_overloaded', message } };
        }
      }
      return await attempt(replica, items);
    } finally {
      permit?.release();
      deps.budget.attemptEnded();
    }
  };

  /**
   * A sub-request that is the whole client request unchanged (one replica takes every input, in order, with
   * all its candidates, and no memory carries the gateway's key) is the client's own body: forwarding that text
   * saves serializing megabytes again.
   */
  const isWholeRequest = (items: Item[]): boolean =>
    ctx.requestBody !== undefined &&
    items.length === inputs.length &&
    items.every((it, k) => it.input === k && it.offset === 0 && it.count === inputs[k]!.num_outputs && stripped[k] === inputs[k]!.memory);

  const attempt = async (replica: Replica, items: Item[]): Promise<Unserved | undefined> => {
    const t0 = performance.now();
    const body = isWholeRequest(items)
      ? ctx.requestBody!
      : stringifyExact(
          {
            request_id: request.request_id,
            inputs: items.map((it) => forwarded(inputs[it.input]!, stripped[it.input]!, it.count)),
          },
          requestMarked,
        );
    result.workMs += performance.now() - t0;
    const remaining = ctx.deadline - Date.now();
    const timeoutMs = Math.min(upstreams.timeoutMs(replica.backend), remaining);
    const nInputs = items.length;
    upstreams.attemptStarted(replica, nInputs);
    const started = performance.now();
    const res = await postResponses(replica, body, ctx.headers, timeoutMs, ctx.signal);
    const ms = performance.now() - started;
    upstreams.attemptEnded(replica, nInputs);
    metrics.backendDuration.observe({ backend: replica.backend }, ms / 1000);
    count(result.backends, replica.backend, nInputs);

    if (!res.ok && ctx.signal?.aborted === true) {
      // Aborted by us, not failed by the backend: the client went away (nobody will read these candidates, and
      // the replica must not be blamed) or the batch deadline ran out (the backend was too slow for it).
      const gone = ctx.clientGone?.() === true;
      metrics.backendRequests.inc({ backend: replica.backend, outcome: gone ? 'cancelled' : 'gateway_backend_timeout' });
      if (!gone) upstreams.recordFailure(replica, 'the batch deadline ran out');
      fail(items, {
        code: 'gateway_backend_timeout',
        message: gone ? 'cancelled: the client closed the connection' : 'the batch deadline (request_timeout_s) ran out',
      }, ms);
      return undefined;
    }
    if (!res.ok) {
      metrics.backendRequests.inc({ backend: replica.backend, outcome: res.failure.code });
      deps.log.warn(
        { backend: replica.backend, replica: replica.id, code: res.failure.code, reason: res.failure.message, inputs: nInputs },
        'backend sub-request failed',
      );
      if (res.failure.notSent) {
        // Nothing reached the backend: the replica leaves rotation at once, and the inputs go to the backend's
        // other replicas, else on down the fallbacks. No load was added anywhere, so this is no retry.
        upstreams.recordConnectFailure(replica, res.failure.message);
        return { kind: 'refused', failure: res.failure };
      }
      if (res.failure.code !== 'gateway_backend_rejected') upstreams.recordFailure(replica, res.failure.message);
      return { kind: 'failed', failure: res.failure };
    }

    const t1 = performance.now();
    let answer: unknown;
    let invalid: string | undefined;
    try {
      const parsed = parseExact(res.text);
      answer = parsed.value;
      if (parsed.nonFinite) invalid = 'the answer holds a non-finite number';
      if (parsed.marked) result.marked = true;
    } catch (err) {
      invalid = `the answer is not JSON: ${(err as Error).message}`;
    }
    const check = invalid === undefined
      ? checkSubResponse(answer, {
          requestId: request.request_id,
          inputs: items.map((it) => ({ id: inputs[it.input]!.id, count: it.count })),
        })
      : { ok: false as const, reason: invalid };
    if (!check.ok) {
      result.workMs += performance.now() - t1;
      metrics.backendRequests.inc({ backend: replica.backend, outcome: 'gateway_backend_invalid_response' });
      upstreams.recordFailure(replica, check.reason);
      deps.log.warn({ backend: replica.backend, replica: replica.id, reason: check.reason }, 'backend answer invalid');
      return { kind: 'failed', failure: { code: 'gateway_backend_invalid_response', message: check.reason } };
    }
    metrics.backendRequests.inc({ backend: replica.backend, outcome: 'ok' });
    upstreams.recordSuccess(replica, ms);
    items.forEach((it, k) => {
      const input = inputs[it.input]!;
      const tag = tagOf(it);
      result.legs.push({ input: it.input, backend: it.backend, route: it.route, arm: it.arm, ms });
      const row = check.slots[k]!;
      for (let c = 0; c < it.count; c++) {
        const slot = row[c]!;
        const idx = it.offset + c;
        let out: AgentOutput;
        if (slot.ok) {
          out = fromBackend(request.request_id, input, idx, slot.candidate, memoryKey, tag);
        } else {
          out = errorCandidate(
            request.request_id, input, idx, 'gateway_backend_invalid_response', slot.reason, it.backend, memoryKey, tag,
          );
        }
        slots[it.input]![idx] = out;
        metrics.candidates.inc({ route: it.route, backend: it.backend, status: out.status });
        if (out.error) {
          count(result.errorCodes, out.error.code, 1);
          metrics.candidateErrors.inc({ backend: it.backend, code: metrics.codeLabel(it.backend, out.error.code) });
        }
      }
    });
    result.workMs += performance.now() - t1;
    return undefined;
  };

  const dispatch = async (items: Item[]): Promise<void> => {
    const byBackend = new Map<string, Item[]>();
    for (const it of items) {
      const list = byBackend.get(it.backend);
      if (list) list.push(it);
      else byBackend.set(it.backend, [it]);
    }
    await Promise.all([...byBackend].map(([backend, group]) => toBackend(backend, group)));
  };

  const items: Item[] = [];
  for (const p of plan.inputs) {
    for (const leg of p.legs) {
      metrics.inputs.inc({ route: p.route, backend: leg.backend });
      items.push({
        input: p.index, backend: leg.backend, count: leg.count, offset: leg.offset, fallbacks: leg.fallbacks,
        route: p.route, arm: p.arm ?? (p.legs.length > 1 ? leg.backend : undefined),
      });
    }
  }
  await dispatch(items);

  for (const row of slots) for (const o of row) result.outputs.push(o);
  return result;
}

/** The input as a backend sees it: the gateway's memory key removed, num_outputs set to this leg's count. */
function forwarded(input: AgentInput, memory: JsonObject, count: number): object {
  return {
    id: input.id,
    instruction: input.instruction,
    tools: input.tools,
    attributes: input.attributes,
    memory,
    num_outputs: count,
    extra_keys: input.extra_keys,
  };
}

function count(map: Record<string, number>, key: string, n: number): void {
  map[key] = (map[key] ?? 0) + n;
}
