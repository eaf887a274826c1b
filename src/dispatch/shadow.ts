/**
 * Shadow traffic (docs/routing.md#shadow-traffic): the client's answer never waits for a shadow, never changes and
 * never fails because of one. A shadow's client span may outlive the batch's span.
 */
import { isDeepStrictEqual } from 'node:util';
import { BatchSignal } from '../abort.js';
import type { MemoryBudget } from '../memory/budget.js';
import { withTraceparent, type CorrelationHeaders } from '../protocol/correlation.js';
import { decisionOf } from '../protocol/answer/answer-check.js';
import { checkAnswerYielding } from '../reader/reader.js';
import { subRequestBody } from '../protocol/request/sub-request.js';
import type { IndexedAgentInput, IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AgentDecision, AgentOutput } from '../protocol/types.js';
import { candidateStarts } from '../protocol/request-limits.js';
import type { BatchPlan } from '../routing/plan.js';
import { postResponses } from '../upstream/post-responses.js';
import { attemptSpanName, endAttemptSpan, replicaCallAttributes } from './attempt-span.js';
import {
  ATTR_AGREED,
  ATTR_BACKEND,
  ATTR_DISAGREED,
  ATTR_INPUTS,
  ATTR_ROUTE,
  EVENT_SHADOW_AGREEMENT,
  EVENT_SHADOW_DROPPED,
} from '../tracing/attributes.js';
import { NOOP_SPAN, type TraceSpan } from '../tracing/trace-span.js';
import type { Replica } from '../upstream/replica.js';
import type { DispatchDeps } from './batch-types.js';

export class ShadowLimiter {
  inFlight = 0;
  constructor(readonly max: number) {}
}

/** A batch's dispatch deps without its retry budget and permits: a shadow never fails over and takes no permit. */
type ShadowDeps = Pick<DispatchDeps, 'upstreams' | 'metrics' | 'log' | 'agent' | 'memoryKey'> & { limiter: ShadowLimiter; memory?: MemoryBudget };

/** isDeepStrictEqual recurses: both decisions were checked against max_json_depth, far below an overflow. */
function sameDecision(a: AgentDecision | null | undefined, b: AgentDecision | null | undefined): boolean {
  if (a == null || b == null) return a == null && b == null;
  return a.say === b.say && isDeepStrictEqual(a.tool_calls, b.tool_calls);
}

/** `first`: where each input's candidates start in the client's answer. */
type Group = { route: string; backend: string; inputs: IndexedAgentInput[]; first: number[] };

/** `primary` resolves with the client's candidates once the batch is answered. The promise is for tests. */
export function startShadows(
  deps: ShadowDeps,
  request: IndexedAgentRequest,
  plan: BatchPlan,
  primary: Promise<AgentOutput[]>,
  correlation: CorrelationHeaders,
  span: TraceSpan = NOOP_SPAN,
): Promise<void> {
  const headers = Object.assign({}, correlation, { 'x-magma-gateway-shadow': '1' });
  // Group per (route, shadow backend): one sub-request each, so one batch costs one slot per shadow backend.
  const groups = new Map<string, Group>();
  const first = candidateStarts(request.inputs);
  const wanted: number[] = [];
  for (const p of plan.inputs) {
    const input = request.inputs[p.index];
    const start = first[p.index];
    if (input === undefined || start === undefined) continue; // the plan is this request's: never
    if (p.shadows.length > 0) for (let c = 0; c < input.num_outputs; c++) wanted.push(start + c);
    for (const backend of p.shadows) {
      const key = `${p.route}\u0000${backend}`;
      const g = groups.get(key);
      if (g) {
        g.inputs.push(input);
        g.first.push(start);
      } else groups.set(key, { route: p.route, backend, inputs: [input], first: [start] });
    }
  }
  // Read as soon as the batch is answered: its candidates are views of bytes given back when its answer is
  // written, while a shadow's answer may come much later.
  const decisions = primary.then((outputs) => {
    const out: (AgentDecision | null | undefined)[] = [];
    for (const k of wanted) {
      const o = outputs[k];
      if (o?.status === 'completed') out[k] = o.output;
    }
    return out;
  });
  decisions.catch(() => undefined);
  const jobs: Promise<void>[] = [];
  for (const g of groups.values()) {
    const shadow = new Shadow(deps, request, g, decisions);
    if (deps.limiter.inFlight >= deps.limiter.max) {
      shadow.dropped(span);
      continue;
    }
    deps.limiter.inFlight++;
    jobs.push(
      shadow
        .run(headers, span)
        .catch((err: unknown) => deps.log.debug({ err, backend: g.backend }, 'shadow failed'))
        .finally(() => deps.limiter.inFlight--),
    );
  }
  return Promise.all(jobs).then(() => undefined);
}

class Shadow {
  private readonly labels: { agent: string; route: string; backend: string };
  private span: TraceSpan | undefined;
  private outcome: string | undefined;
  private status: number | undefined;
  private reason: string | undefined;

  constructor(
    private readonly deps: ShadowDeps,
    private readonly request: IndexedAgentRequest,
    private readonly g: Group,
    /** Undefined: not completed. */
    private readonly primary: Promise<(AgentDecision | null | undefined)[]>,
  ) {
    this.labels = { agent: deps.agent, route: g.route, backend: g.backend };
  }

  dropped(parent: TraceSpan): void {
    this.ended('dropped');
    if (parent.recording) parent.event(EVENT_SHADOW_DROPPED, { [ATTR_ROUTE]: this.g.route, [ATTR_BACKEND]: this.g.backend });
  }

  async run(headers: Record<string, string>, parent: TraceSpan): Promise<void> {
    const replica = this.deps.upstreams.shard(this.g.backend, 1)[0]?.replica;
    if (replica === undefined) return this.ended('no_backend');
    if (parent.recording) {
      this.span = parent.client(`shadow ${attemptSpanName(replica)}`, {
        [ATTR_ROUTE]: this.g.route,
        ...replicaCallAttributes(replica, 'POST', '/v1/responses'),
        [ATTR_INPUTS]: this.g.inputs.length,
      });
    }
    try {
      await this.call(replica, withTraceparent(headers, (this.span ?? parent).traceparent));
    } finally {
      if (this.span !== undefined) endAttemptSpan(this.span, this.outcome, this.status, this.reason);
    }
  }

  private ended(outcome: string, spanOutcome = outcome, reason?: string): void {
    this.deps.metrics.shadowRequests.inc(Object.assign({}, this.labels, { outcome }));
    this.outcome = spanOutcome;
    this.reason = reason;
  }

  private async call(replica: Replica, headers: Record<string, string>): Promise<void> {
    const { deps, g } = this;
    const body = subRequestBody(Buffer.from(JSON.stringify(this.request.request_id)), g.inputs.map((inp) => ({ raw: inp.raw, count: inp.num_outputs })));
    // Shed first: no room now, or room needed later by a batch, ends the shadow here.
    const signal = new BatchSignal();
    let shed = false;
    const hold = deps.memory?.tryHold(body.length, () => {
      shed = true;
      signal.abort();
    });
    if (deps.memory !== undefined && hold === undefined) return this.ended('shed');
    try {
      const res = await postResponses(replica, { body, headers, timeoutMs: deps.upstreams.timeoutMs(g.backend), signal, memory: hold });
      if (shed) return this.ended('shed');
      await this.judge(replica, res);
    } finally {
      hold?.release();
    }
  }

  private async judge(replica: Replica, res: Awaited<ReturnType<typeof postResponses>>): Promise<void> {
    const { request, g } = this;
    this.status = res.status;
    if (!res.ok) return this.ended('failed', res.failure.code, res.failure.message);
    // Until judged: a check that throws leaves the span saying the answer was not valid.
    this.outcome = 'gateway_backend_invalid_response';
    const shape = { requestId: request.request_id, inputs: g.inputs.map((inp) => ({ id: inp.id, count: inp.num_outputs })) };
    const check = await checkAnswerYielding(res.bytes, shape, replica.maxJsonDepth, this.deps.memoryKey, replica.maxMemoryKeyRepeats);
    if (!check.ok || check.slots.some((row) => row.some((s) => !s.ok))) {
      return this.ended('invalid', 'gateway_backend_invalid_response', check.ok ? 'a candidate is malformed' : check.reason);
    }
    this.ended('ok');

    const outputs = await this.primary;
    let agreedN = 0;
    let disagreedN = 0;
    g.first.forEach((first, k) => {
      const row = check.slots[k] ?? []; // one row per input of the group, checked above
      row.forEach((slot, c) => {
        const mine = outputs[first + c];
        if (!slot.ok || mine === undefined) return; // nothing to compare against
        const theirs = decisionOf(slot.candidate);
        const agreed = theirs.completed && sameDecision(mine, theirs.output);
        this.deps.metrics.shadowAgreement.inc(Object.assign({}, this.labels, { agreed: String(agreed) }));
        if (agreed) agreedN++;
        else disagreedN++;
      });
    });
    this.span?.event(EVENT_SHADOW_AGREEMENT, { [ATTR_AGREED]: agreedN, [ATTR_DISAGREED]: disagreedN });
  }
}
