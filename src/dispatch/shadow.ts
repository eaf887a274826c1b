/**
 * Shadow traffic (docs/routing.md#shadow-traffic): a copy of each routed input goes to the route's shadow backends so a team can try
 * a new agent on live traffic without it answering anyone. The client's answer never waits for a shadow, never
 * changes because of one and never fails because of one: shadows run detached, bounded by
 * shadow_max_in_flight (past it they are dropped and counted, never queued), and every error is swallowed into
 * a metric. Answers are validated and compared with the primary's decision per candidate.
 *
 * Traced (docs/operations.md#tracing): each shadow sub-request is a client span under the batch's span, which may outlive
 * it (a shadow finishes after the answer went out), with the comparison as a `shadow_agreement` event.
 */
import { isDeepStrictEqual } from 'node:util';
import { BatchSignal } from '../abort.js';
import type { Logger } from '../logging.js';
import type { MemoryBudget } from '../memory/budget.js';
import { withTraceparent, type CorrelationHeaders } from '../protocol/correlation.js';
import type { GatewayMetrics } from '../metrics.js';
import { decisionOf } from '../protocol/answer/answer-check.js';
import { checkAnswerYielding } from './answer-check-yielding.js';
import { subRequestBody } from '../protocol/request/sub-request.js';
import type { IndexedAgentInput, IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { AgentDecision, AgentOutput } from '../protocol/types.js';
import type { BatchPlan } from '../routing/plan.js';
import { postResponses } from '../upstream/backend-call.js';
import type { Upstreams } from '../upstream/upstreams.js';
import { attemptSpanName, endAttemptSpan, serverOf } from './attempt-span.js';
import {
  ATTR_AGREED,
  ATTR_BACKEND,
  ATTR_DISAGREED,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_INPUTS,
  ATTR_REPLICA,
  ATTR_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  EVENT_SHADOW_AGREEMENT,
  EVENT_SHADOW_DROPPED,
} from '../tracing/attributes.js';
import { NOOP_SPAN, type TraceSpan } from '../tracing/trace-span.js';
import type { Replica } from '../upstream/replica.js';

export class ShadowLimiter {
  inFlight = 0;
  constructor(readonly max: number) {}
}

interface ShadowDeps {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  log: Logger;
  /** The agent the batch was sent to: its metrics' `agent` label. */
  agent: string;
  memoryKey: string;
  limiter: ShadowLimiter;
  /** The memory budget: a shadow answer is held only while there is room, and dropped first (docs/memory-budget.md). */
  memory?: MemoryBudget;
}

/**
 * Same say and same tool calls (arguments compared as data). isDeepStrictEqual recurses: both decisions come
 * from answers checked against the replica's max_json_depth (protocol/answer/answer-check.ts), far below where it would
 * overflow.
 */
function sameDecision(a: AgentDecision | null | undefined, b: AgentDecision | null | undefined): boolean {
  if (a == null || b == null) return a == null && b == null;
  return a.say === b.say && isDeepStrictEqual(a.tool_calls, b.tool_calls);
}

/** The inputs of one route copied to one shadow backend (with their positions in the request): one sub-request. */
type Group = { route: string; backend: string; inputs: IndexedAgentInput[]; at: number[] };

/**
 * Start the shadow sub-requests of a batch. `primary` resolves with the client's candidates (in request
 * order) once the batch is answered; comparisons wait for it. Each shadow call carries the batch's correlation
 * headers, so a shadow's log lines join the batch's, and `x-magma-gateway-shadow: 1` so the backend can tell
 * (docs/routing.md#shadow-traffic). Returns a promise for tests; callers ignore it.
 */
export function startShadows(
  deps: ShadowDeps,
  request: IndexedAgentRequest,
  plan: BatchPlan,
  primary: Promise<AgentOutput[]>,
  correlation: CorrelationHeaders,
  /** The batch's server span; the no-op span when untraced. */
  span: TraceSpan = NOOP_SPAN,
): Promise<void> {
  const headers = { ...correlation, 'x-magma-gateway-shadow': '1' };
  // Group per (route, shadow backend): one sub-request each, so one batch costs one slot per shadow backend.
  const groups = new Map<string, Group>();
  for (const p of plan.inputs) {
    const input = request.inputs[p.index];
    if (input === undefined) continue; // the plan is this request's: never
    for (const backend of p.shadows) {
      const key = `${p.route}\u0000${backend}`;
      const g = groups.get(key);
      if (g) {
        g.inputs.push(input);
        g.at.push(p.index);
      } else groups.set(key, { route: p.route, backend, inputs: [input], at: [p.index] });
    }
  }
  const jobs: Promise<void>[] = [];
  for (const g of groups.values()) {
    if (deps.limiter.inFlight >= deps.limiter.max) {
      deps.metrics.shadowRequests.inc({ agent: deps.agent, route: g.route, backend: g.backend, outcome: 'dropped' });
      if (span.recording) span.event(EVENT_SHADOW_DROPPED, { [ATTR_ROUTE]: g.route, [ATTR_BACKEND]: g.backend });
      continue;
    }
    deps.limiter.inFlight++;
    jobs.push(
      runShadow(deps, request, g, primary, headers, span)
        .catch((err: unknown) => deps.log.debug({ err, backend: g.backend }, 'shadow failed'))
        .finally(() => deps.limiter.inFlight--),
    );
  }
  return Promise.all(jobs).then(() => undefined);
}

/** The shadow's client span, when the batch's span is recorded. */
function shadowSpan(parent: TraceSpan, g: Group, replica: Replica): TraceSpan | undefined {
  if (!parent.recording) return undefined;
  const server = serverOf(replica);
  return parent.client(`shadow ${attemptSpanName(replica)}`, {
    [ATTR_ROUTE]: g.route,
    [ATTR_BACKEND]: g.backend,
    [ATTR_REPLICA]: replica.id,
    [ATTR_HTTP_REQUEST_METHOD]: 'POST',
    [ATTR_URL_FULL]: replica.origin + replica.path('/v1/responses'),
    [ATTR_SERVER_ADDRESS]: server.address,
    [ATTR_SERVER_PORT]: server.port,
    [ATTR_INPUTS]: g.inputs.length,
  });
}

async function runShadow(
  deps: ShadowDeps,
  request: IndexedAgentRequest,
  g: Group,
  primary: Promise<AgentOutput[]>,
  headers: Record<string, string>,
  parent: TraceSpan,
): Promise<void> {
  const replica = deps.upstreams.shard(g.backend, 1)[0]?.replica;
  if (replica === undefined) {
    deps.metrics.shadowRequests.inc({ agent: deps.agent, route: g.route, backend: g.backend, outcome: 'no_backend' });
    return;
  }
  const span = shadowSpan(parent, g, replica);
  const end: { outcome?: string; status?: number; reason?: string } = {};
  try {
    await shadowCall(deps, request, g, primary, withTraceparent(headers, (span ?? parent).traceparent), replica, span, end);
  } finally {
    if (span !== undefined) endAttemptSpan(span, end.outcome, end.status, end.reason);
  }
}

/** The shadow sub-request and its comparison; `end` gets how it ended, for the span. */
async function shadowCall(
  deps: ShadowDeps,
  request: IndexedAgentRequest,
  g: Group,
  primary: Promise<AgentOutput[]>,
  headers: Record<string, string>,
  replica: Replica,
  span: TraceSpan | undefined,
  end: { outcome?: string; status?: number; reason?: string },
): Promise<void> {
  const { metrics } = deps;
  const labels = { agent: deps.agent, route: g.route, backend: g.backend };
  // Written from the inputs' bytes, never decoded for a shadow.
  const body = subRequestBody(Buffer.from(JSON.stringify(request.request_id)), g.inputs.map((inp) => ({ raw: inp.raw, count: inp.num_outputs })));
  // Shed first (docs/memory-budget.md): no room now, or room needed later by a batch, ends the shadow here.
  const signal = new BatchSignal();
  let shed = false;
  const hold = deps.memory?.tryHold(body.length, () => {
    shed = true;
    signal.abort();
  });
  if (deps.memory !== undefined && hold === undefined) {
    metrics.shadowRequests.inc({ ...labels, outcome: 'shed' });
    end.outcome = 'shed';
    return;
  }
  let res: Awaited<ReturnType<typeof postResponses>>;
  try {
    res = await postResponses(replica, { body, headers, timeoutMs: deps.upstreams.timeoutMs(g.backend), signal, memory: hold });
    if (shed) {
      metrics.shadowRequests.inc({ ...labels, outcome: 'shed' });
      end.outcome = 'shed';
      return;
    }
    await judgeShadow(deps, request, g, primary, res, replica, span, end);
  } finally {
    hold?.release();
  }
}

/** The shadow's answer judged and compared with the primary's; `end` gets how it ended, for the span. */
async function judgeShadow(
  deps: ShadowDeps,
  request: IndexedAgentRequest,
  g: Group,
  primary: Promise<AgentOutput[]>,
  res: Awaited<ReturnType<typeof postResponses>>,
  replica: Replica,
  span: TraceSpan | undefined,
  end: { outcome?: string; status?: number; reason?: string },
): Promise<void> {
  const { metrics } = deps;
  const labels = { agent: deps.agent, route: g.route, backend: g.backend };
  end.status = res.status;
  if (!res.ok) {
    metrics.shadowRequests.inc({ ...labels, outcome: 'failed' });
    end.outcome = res.failure.code;
    end.reason = res.failure.message;
    return;
  }
  end.outcome = 'gateway_backend_invalid_response';
  // Judged as a primary answer is (protocol/answer/answer-check.ts): memory and steps stay bytes, never decoded here.
  const shape = { requestId: request.request_id, inputs: g.inputs.map((inp) => ({ id: inp.id, count: inp.num_outputs })) };
  const check = await checkAnswerYielding(res.bytes, shape, replica.maxJsonDepth, deps.memoryKey);
  if (!check.ok || check.slots.some((row) => row.some((s) => !s.ok))) {
    metrics.shadowRequests.inc({ ...labels, outcome: 'invalid' });
    end.reason = check.ok ? 'a candidate is malformed' : check.reason;
    return;
  }
  metrics.shadowRequests.inc({ ...labels, outcome: 'ok' });
  end.outcome = 'ok';

  // Candidates of input i start at this offset in the client's answer (input order, then candidate index).
  const outputs = await primary;
  const offsets: number[] = [];
  let at = 0;
  for (const inp of request.inputs) {
    offsets.push(at);
    at += inp.num_outputs;
  }
  let agreedN = 0;
  let disagreedN = 0;
  g.at.forEach((inputIndex, k) => {
    // One row per input of the shadow's group and one offset per input of the request: both always there.
    const row = check.slots[k] ?? [];
    const first = offsets[inputIndex] ?? 0;
    row.forEach((slot, c) => {
      const mine = outputs[first + c];
      if (!slot.ok || mine === undefined || mine.status !== 'completed') return; // nothing to compare against
      const theirs = decisionOf(slot.candidate);
      const agreed = theirs.completed && sameDecision(mine.output, theirs.output);
      metrics.shadowAgreement.inc({ ...labels, agreed: String(agreed) });
      if (agreed) agreedN++;
      else disagreedN++;
    });
  });
  span?.event(EVENT_SHADOW_AGREEMENT, { [ATTR_AGREED]: agreedN, [ATTR_DISAGREED]: disagreedN });
}
