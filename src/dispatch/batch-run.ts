/** One batch on its way through the backends: nothing here throws for a backend's sake. */
import { performance } from 'node:perf_hooks';
import type { IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { BatchPlan } from '../routing/plan.js';
import type { Replica } from '../upstream/replica.js';
import type { AttemptFailure } from '../errors.js';
import { Attempt, type AttemptResult, type BatchInputs } from './attempt.js';
import type { BatchContext, BatchResult, DispatchDeps } from './batch-types.js';
import { coversRequest, groupBy, itemsOf, type Item } from './batch-item.js';
import type { MetricsBatchObserver } from './batch-observer.js';
import { BatchSlots, count } from './batch-slots.js';
import { StreamedAnswer } from './streamed-answer.js';
import { abortedFailure, decideFailover, faultySlots, resolveMove, salvageable, type FailoverView, type Unserved } from './failover.js';

export class BatchRun {
  private readonly inputs: BatchInputs;
  private readonly slots: BatchSlots;
  private readonly deadline: number;
  private workMs = 0;
  private readonly backends: Record<string, number> = {};
  private streamed: number | undefined;

  constructor(
    private readonly deps: DispatchDeps,
    private readonly observer: MetricsBatchObserver,
    request: IndexedAgentRequest,
    private readonly plan: BatchPlan,
    private readonly ctx: BatchContext,
  ) {
    this.deadline = ctx.deadline;
    this.inputs = { request, requestBody: ctx.requestBody };
    this.slots = new BatchSlots(request, deps.memoryKey, observer);
    if (ctx.cached !== undefined) for (const [input, outs] of ctx.cached) this.slots.cached(input, outs);
  }

  async run(): Promise<BatchResult> {
    const items = itemsOf(this.plan, this.inputs.request);
    for (const it of items) this.observer.legRouted(it.route, it.backend);
    await this.dispatch(items);
    return {
      outputs: this.streamed === undefined ? this.slots.outputs() : [],
      workMs: this.workMs,
      backends: this.backends,
      errorCodes: this.slots.errorCodes,
      legs: this.slots.legs,
      calls: this.slots.calls,
      streamed: this.streamed,
      ...(this.ctx.cached === undefined || this.ctx.cached.size === 0 ? {} : { cached: new Set(this.ctx.cached.keys()) }),
    };
  }

  private async dispatch(items: Item[]): Promise<void> {
    const byBackend = groupBy(items, (it) => it.backend);
    // Most batches go to one backend's one replica: awaited directly, without Promise.all's arrays and closures.
    if (byBackend.size === 1) for (const [backend, group] of byBackend) await this.toBackend(backend, group);
    else await Promise.all([...byBackend].map(([backend, group]) => this.toBackend(backend, group)));
  }

  /** `cause`: why earlier replicas were left (a refused connection), the answer when nothing else takes the items. */
  private async toBackend(backend: string, items: Item[], tried?: ReadonlySet<Replica>, cause?: AttemptFailure): Promise<void> {
    const shards = this.deps.upstreams.shard(backend, items.length, tried);
    if (shards.length === 0) {
      await this.settle(items, cause === undefined ? { kind: 'no-replica', backend } : { kind: 'no-replica', backend, cause });
      return;
    }
    const [only] = shards;
    if (shards.length === 1 && only !== undefined) {
      if (tried !== undefined) this.observer.replicaRetry(backend);
      await this.send(only.replica, items, tried);
      return;
    }
    const jobs: Promise<void>[] = [];
    let at = 0;
    for (const { replica, count: n } of shards) {
      if (tried !== undefined) this.observer.replicaRetry(backend);
      jobs.push(this.send(replica, items.slice(at, at + n), tried));
      at += n;
    }
    await Promise.all(jobs);
  }

  private async send(replica: Replica, items: Item[], tried: ReadonlySet<Replica> | undefined): Promise<void> {
    if (this.deadline - Date.now() <= 0) {
      await this.settle(items, { kind: 'no-time' });
      return;
    }
    const { request } = this.inputs;
    // Only an attempt carrying the whole batch may stream: nothing else then writes to the client.
    const stream =
      this.ctx.stream !== undefined && coversRequest(request, items)
        ? new StreamedAnswer(this.slots, request, items, this.ctx.stream.sink, replica.maxJsonDepth, this.deps.memoryKey, replica.maxMemoryKeyRepeats, this.ctx.memory)
        : undefined;
    const attempt = new Attempt(this.deps, this.observer, this.inputs, this.ctx, replica, items, tried, stream);
    const r = await attempt.run();
    this.account(replica, items.length, r);
    const call = attempt.call;
    if (call !== undefined) this.slots.called(replica.backend, items, call.outcome, call.ms);
    // Moving on happens here, after the attempt gave its permit and its budget slot back.
    if (r.kind === 'streamed') {
      this.slots.streamed(items, r.ms);
      this.streamed = r.written;
    } else if (r.kind === 'answered') {
      // Building the candidates is the gateway's own work too (x-gateway-overhead-ms).
      const t0 = performance.now();
      const faulty = faultySlots(items, r.rows);
      this.slots.answer(items, r.rows, r.ms, faulty === undefined ? undefined : salvageable);
      this.workMs += performance.now() - t0;
      if (faulty !== undefined) {
        this.deps.log.warn({ backend: replica.backend, replica: replica.id, candidates: faulty.items.reduce((n, it) => n + it.count, 0), reason: faulty.failure.message.slice(0, 512) }, 'backend answer partly invalid: its bad candidates go to the fallback');
        const why = { kind: 'failed' as const, failure: faulty.failure };
        await Promise.all(faulty.waves.map((wave) => this.settle(wave, why)));
      }
    } else if (r.kind === 'aborted') this.slots.fail(items, abortedFailure(r.clientGone), r.ms);
    else await this.settle(items, r.why);
  }

  private account(replica: Replica, nInputs: number, r: AttemptResult): void {
    this.workMs += r.workMs;
    // Counted once the sub-request was on the wire, whatever its answer; not when it waited for a permit in vain.
    if (r.kind !== 'unserved' || r.why.kind !== 'unsent') count(this.backends, replica.backend, nInputs);
  }

  private async settle(items: Item[], why: Unserved<Replica>): Promise<void> {
    const decision = decideFailover(items, why, this.view());
    if (decision.sameBackend !== undefined) {
      const s = decision.sameBackend;
      await this.toBackend(s.backend, s.items, s.exclude, s.cause);
      return;
    }
    if (decision.final !== undefined) this.slots.fail(decision.final.items, decision.final.failure);
    const { budget } = this.deps;
    const jobs: Promise<void>[] = [];
    for (const d of decision.destinations) {
      // Asked per destination right before its sub-requests start, which count in flight for the next one.
      const granted = decision.retry && budget.tryRetry();
      const step = resolveMove(decision, d, granted);
      if (step.kind === 'exhausted') {
        this.observer.budgetExhausted(step.to);
        this.slots.fail(step.items, step.failure);
        continue;
      }
      for (const from of step.from) this.observer.fallback(from.route, from.backend, step.to);
      const moved = this.dispatch(step.moved);
      jobs.push(step.consumesBudget ? moved.finally(() => budget.retryDone()) : moved);
    }
    await Promise.all(jobs);
  }

  private view(): FailoverView<Replica> {
    const { upstreams } = this.deps;
    return {
      timeLeftMs: this.deadline - Date.now(),
      aborted: this.ctx.signal?.aborted === true,
      expectedMs: (b) => upstreams.expectedMs(b),
      hasReplica: (b, exclude) => upstreams.routable(b, exclude).length > 0,
    };
  }
}
