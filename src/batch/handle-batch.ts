/** One AgentRequest -> AgentResponse, independent of the HTTP layer (docs/architecture.md#the-life-of-a-batch). */
import { performance } from 'node:perf_hooks';
import { readBatchYielding } from './read-batch.js';
import type { GatewayState } from './gateway-state.js';
import { correlationHeaders } from '../protocol/correlation.js';
import type { GatewayRuntime } from '../runtime.js';
import { errorBody } from '../errors.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import { BATCH_SPAN_ATTRIBUTES, BATCH_SPAN_NAME, traceAnswer, traceRequest, traceThrown } from './batch-span.js';
import { requestObjectsEstimate } from '../memory/estimates.js';
import { ROOT_AGENT } from '../config/schema.js';
import type { CompiledAgent } from '../routing/agents.js';
import { batchLogIds } from './batch-log.js';
import { BatchCycle, type BatchAnswer, type BatchExchange } from './batch-cycle.js';

export async function handleBatch(gw: GatewayState, ex: BatchExchange): Promise<BatchAnswer> {
  const runtime = gw.current;
  // Before any await: a reload while this batch waits must not close the pools it is about to use.
  runtime.enter();
  const span = runtime.tracing.server(BATCH_SPAN_NAME, ex.headers, BATCH_SPAN_ATTRIBUTES);
  try {
    const agent = runtime.agent(ex.agent);
    if (agent === undefined) {
      return { status: 404, body: JSON.stringify(errorBody('GATEWAY_ERR_UNKNOWN_AGENT', unknownAgentDetail(ex.agent))) };
    }
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

export function unknownAgentDetail(name: string | undefined): string {
  if (name === undefined) {
    return 'no default agent is configured: the config has no top-level routes; send batches to /agents/<name>/v1/responses';
  }
  const quoted = JSON.stringify(name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}...` : name);
  if (name === ROOT_AGENT) return `unknown agent ${quoted}: the default agent (the top-level routes) is served at /, not under /agents/`;
  return `unknown agent ${quoted}: no agent of that name is configured under "agents"`;
}

async function batchOn(runtime: GatewayRuntime, agent: CompiledAgent, gw: GatewayState, ex: BatchExchange, span: TraceSpan): Promise<BatchAnswer> {
  const t0 = performance.now();
  // Its bytes stay until its cycle ends, even if the client left; the response cache keeps them while it copies.
  const letGo = ex.memory?.keep();
  let cycle: BatchCycle | undefined;
  try {
    const read = await readBatchYielding(ex.body, runtime.config.server, agent.routes.memoryKey, ex.log);
    if (!read.ok) return { status: read.status, body: read.body };
    const { request, raw, rawHash } = read;
    ex.memory?.grow(requestObjectsEstimate(request.inputs));
    const headers = correlationHeaders(ex.headers);
    if (span.recording) traceRequest(span, request, headers);
    const ids = batchLogIds(request.request_id, headers, span.traceparent);
    cycle = new BatchCycle({ request, raw, rawHash, runtime, agent, gw, ex, span, headers, ids, t0 });
    return (await cycle.replay()) ?? (await cycle.admitClient()) ?? (await cycle.dispatch(await cycle.plan()));
  } finally {
    try {
      cycle?.close();
    } finally {
      letGo?.();
    }
  }
}
