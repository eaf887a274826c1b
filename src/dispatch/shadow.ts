/**
 * Shadow traffic (README.md, "Shadow traffic"): a copy of each routed input goes to the route's shadow backends so a team can try
 * a new agent on live traffic without it answering anyone. The client's answer never waits for a shadow, never
 * changes because of one and never fails because of one: shadows run detached, bounded by
 * shadow_max_in_flight (past it they are dropped and counted, never queued), and every error is swallowed into
 * a metric. Answers are validated and compared with the primary's decision per candidate.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from '../logging.js';
import type { CorrelationHeaders } from '../protocol/correlation.js';
import type { GatewayMetrics } from '../metrics.js';
import { parseExact, stringifyExact } from '../protocol/exact-json.js';
import { checkSubResponse } from '../protocol/response-check.js';
import type { AgentDecision, AgentOutput, AgentRequest } from '../protocol/types.js';
import type { BatchPlan } from '../routing/plan.js';
import { postResponses } from '../upstream/backend-call.js';
import type { Upstreams } from '../upstream/upstreams.js';
import { stripMemoryKey } from './candidates.js';

export class ShadowLimiter {
  inFlight = 0;
  constructor(readonly max: number) {}
}

export interface ShadowDeps {
  upstreams: Upstreams;
  metrics: GatewayMetrics;
  log: Logger;
  /** The agent the batch was sent to: its metrics' `agent` label. */
  agent: string;
  memoryKey: string;
  limiter: ShadowLimiter;
}

/**
 * Same say and same tool calls (arguments compared as data). isDeepStrictEqual recurses: both decisions come
 * from answers postResponses checked against server.max_json_depth, far below where it would overflow.
 */
export function sameDecision(a: AgentDecision | null | undefined, b: AgentDecision | null | undefined): boolean {
  if (a == null || b == null) return a == null && b == null;
  return a.say === b.say && isDeepStrictEqual(a.tool_calls, b.tool_calls);
}

/**
 * Start the shadow sub-requests of a batch. `primary` resolves with the client's candidates (in request
 * order) once the batch is answered; comparisons wait for it. Each shadow call carries the batch's correlation
 * headers, so a shadow's log lines join the batch's, and `x-magma-gateway-shadow: 1` so the backend can tell
 * (README "Shadow traffic"). Returns a promise for tests; callers ignore it.
 */
export function startShadows(
  deps: ShadowDeps,
  request: AgentRequest,
  plan: BatchPlan,
  marked: boolean,
  primary: Promise<AgentOutput[]>,
  correlation: CorrelationHeaders,
): Promise<void> {
  const headers = { ...correlation, 'x-magma-gateway-shadow': '1' };
  // Group per (route, shadow backend): one sub-request each, so one batch costs one slot per shadow backend.
  const groups = new Map<string, { route: string; backend: string; inputs: number[] }>();
  for (const p of plan.inputs) {
    for (const backend of p.shadows) {
      const key = `${p.route}\u0000${backend}`;
      const g = groups.get(key);
      if (g) g.inputs.push(p.index);
      else groups.set(key, { route: p.route, backend, inputs: [p.index] });
    }
  }
  const jobs: Promise<void>[] = [];
  for (const g of groups.values()) {
    if (deps.limiter.inFlight >= deps.limiter.max) {
      deps.metrics.shadowRequests.inc({ agent: deps.agent, route: g.route, backend: g.backend, outcome: 'dropped' });
      continue;
    }
    deps.limiter.inFlight++;
    jobs.push(
      runShadow(deps, request, g, marked, primary, headers)
        .catch((err: unknown) => deps.log.debug({ err, backend: g.backend }, 'shadow failed'))
        .finally(() => deps.limiter.inFlight--),
    );
  }
  return Promise.all(jobs).then(() => undefined);
}

async function runShadow(
  deps: ShadowDeps,
  request: AgentRequest,
  g: { route: string; backend: string; inputs: number[] },
  marked: boolean,
  primary: Promise<AgentOutput[]>,
  headers: Record<string, string>,
): Promise<void> {
  const { metrics } = deps;
  const labels = { agent: deps.agent, route: g.route, backend: g.backend };
  const replica = deps.upstreams.shard(g.backend, 1)[0]?.replica;
  if (replica === undefined) {
    metrics.shadowRequests.inc({ ...labels, outcome: 'no_backend' });
    return;
  }
  const inputs = g.inputs.map((i) => request.inputs[i]!); // i indexes request.inputs (loop bound)
  const body = stringifyExact(
    {
      request_id: request.request_id,
      inputs: inputs.map((inp) => ({ ...inp, memory: stripMemoryKey(inp.memory, deps.memoryKey) })),
    },
    marked,
  );
  const res = await postResponses(replica, body, headers, deps.upstreams.timeoutMs(g.backend));
  if (!res.ok) {
    metrics.shadowRequests.inc({ ...labels, outcome: 'failed' });
    return;
  }
  let answer: unknown;
  try {
    answer = parseExact(res.text).value;
  } catch {
    metrics.shadowRequests.inc({ ...labels, outcome: 'invalid' });
    return;
  }
  const check = checkSubResponse(answer, {
    requestId: request.request_id,
    inputs: inputs.map((inp) => ({ id: inp.id, count: inp.num_outputs })),
  });
  if (!check.ok || check.slots.some((row) => row.some((s) => !s.ok))) {
    metrics.shadowRequests.inc({ ...labels, outcome: 'invalid' });
    return;
  }
  metrics.shadowRequests.inc({ ...labels, outcome: 'ok' });

  // Candidates of input i start at this offset in the client's answer (input order, then candidate index).
  const outputs = await primary;
  const offsets: number[] = [];
  let at = 0;
  for (const inp of request.inputs) {
    offsets.push(at);
    at += inp.num_outputs;
  }
  g.inputs.forEach((inputIndex, k) => {
    check.slots[k]!.forEach((slot, c) => { // k indexes check.slots (loop bound)
      const mine = outputs[offsets[inputIndex]! + c]; // offsets has one entry per input
      if (!slot.ok || mine === undefined || mine.status !== 'completed') return; // nothing to compare against
      const agreed = slot.candidate.status === 'completed' && sameDecision(mine.output, slot.candidate.output);
      metrics.shadowAgreement.inc({ ...labels, agreed: String(agreed) });
    });
  });
}
