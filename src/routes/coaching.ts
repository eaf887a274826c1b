/**
 * The coaching endpoints (docs/routing.md#coaching-routing). Sessions that succeeded are not rolled back when another
 * fails: a DELETE could remove a session an identical earlier PUT had created.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { aggregate, coachingBackends, isSuccess, SessionAffinity, type BackendOutcome } from '../coaching/backends.js';
import { BatchSignal, onClientGone, type AbortLike } from '../abort.js';
import { answerDetail, coachingHeaders, forward } from '../coaching/forward.js';
import { findTarget, ruleBackend, runIdOf } from '../coaching/trajectory.js';
import { stripGatewayTags } from '../protocol/memory-tag.js';
import { COACHING_SPANS, traceCoachingStatus, type CoachingSpanStart } from '../coaching/coaching-span.js';
import { ATTR_BACKEND, ATTR_BACKENDS, ATTR_REQUEST_ID, ATTR_RUN_ID, ATTR_VIA, ATTR_X_REQUEST_ID } from '../tracing/attributes.js';
import type { TraceSpan } from '../tracing/trace-span.js';
import { JsonDepthError, JsonSyntaxError, parseExact, stringifyExact, type ExactParse } from '../protocol/json/exact-json.js';
import { isJsonObject } from '../protocol/schemas.js';
import type { JsonObject, ValidationIssue } from '../protocol/types.js';
import type { CompiledAgent } from '../routing/agents.js';
import type { GatewayRuntime } from '../runtime.js';
import { AGENT_PREFIX_PATTERN, sendUnknownAgent, type AgentParams } from '../http/agent-path.js';
import { errorBody, GatewayError } from '../errors.js';
import { firstInvalidUtf8 } from '../protocol/json/utf8.js';
import { isUtf8 } from 'node:buffer';
import { budgetedBodies, holdOf } from '../http/budgeted-body.js';
import type { BudgetHold } from '../memory/budget.js';
import { overBudgetBody, overBudgetHeaders } from '../http/front-rules.js';
import { coachingObjectsEstimate } from '../coaching/tree-estimate.js';

/** The 422 in FastAPI's exact shape (docs/protocol-fidelity.md#agent-and-http-errors). */
function send422(reply: FastifyReply, detail: ValidationIssue[]): FastifyReply {
  return reply.code(422).header('content-type', 'application/json').send(stringifyExact({ detail }));
}

const NO_COACHING = 'no coaching-capable backend';

function unavailable(reply: FastifyReply, detail: string): FastifyReply {
  return reply.code(503).send(errorBody('GATEWAY_ERR_COACHING_UNAVAILABLE', detail));
}

type SessionParams = { run_id: string } & Partial<AgentParams>;

interface Call<R extends FastifyRequest = FastifyRequest> {
  runtime: GatewayRuntime;
  agent: CompiledAgent;
  req: R;
  reply: FastifyReply;
  span: TraceSpan;
}

/** Aborts when the client goes away before the answer is written. */
function clientGone(reply: FastifyReply): { signal: AbortLike; done: () => void } {
  const signal = new BatchSignal();
  return { signal, done: onClientGone(reply.raw, () => signal.abort()) };
}

async function session(
  { runtime, agent, req, reply, span }: Call<FastifyRequest<{ Params: { run_id: string } }>>,
  affinity: SessionAffinity,
  method: 'PUT' | 'DELETE',
): Promise<FastifyReply> {
  const backends = coachingBackends(runtime, agent);
  if (backends.length === 0) return unavailable(reply, NO_COACHING);
  const runId = req.params.run_id;
  // The session config is the agent's business: forwarded as the exact text that came.
  const body = method === 'PUT' ? (typeof req.body === 'string' ? req.body : '') : undefined;
  const headers = coachingHeaders(req.headers, method === 'PUT');
  if (span.recording) span.set({ [ATTR_RUN_ID]: runId, [ATTR_BACKENDS]: backends, [ATTR_X_REQUEST_ID]: [headers['x-request-id']] });
  const gone = clientGone(reply);
  const outcomes = await Promise.all(
    backends.map(async (backend): Promise<BackendOutcome> => {
      const replica = affinity.pick(runtime, backend, runId);
      if (replica === undefined) return { backend, status: 503, detail: 'no ready replica offers coaching' };
      const r = await forward(replica, {
        method,
        path: `/v1/coaching/sessions/${encodeURIComponent(runId)}`,
        body,
        headers,
        timeoutMs: runtime.upstreams.timeoutMs(backend),
        signal: gone.signal,
      }, span);
      if (method === 'PUT' && r.ok && isSuccess(r.status)) affinity.remember(backend, runId, replica);
      // A session deleted (or already unknown) there: nothing left to stick to.
      if (method === 'DELETE' && r.ok && (isSuccess(r.status) || r.status === 404)) affinity.forget(backend, runId);
      return r.ok && isSuccess(r.status) ? { backend, status: r.status } : { backend, status: r.status, detail: answerDetail(r) };
    }),
  );
  gone.done();
  const answer = aggregate(method, runId, outcomes);
  req.log.info(
    { run_id: runId, agent: agent.name, method, backends: Object.fromEntries(outcomes.map((o) => [o.backend, o.status])) },
    'coaching session',
  );
  reply.header('x-request-id', headers['x-request-id']);
  if (answer.body === undefined) return reply.code(204).send();
  return reply.code(answer.status).send(answer.body);
}

/**
 * Room for objects about to be built over an admitted request (a coaching body's parsed tree,
 * docs/memory-budget.md#what-is-counted), waited for as an answer's bytes are. False after `ms` without room: the
 * bytes are given back, and the caller answers the budget's 503.
 */
function growWhenRoom(hold: BudgetHold, bytes: number, ms: number): Promise<boolean> {
  if (hold.charge(bytes)) return Promise.resolve(true);
  return new Promise((resolve) => {
    let waiting = true;
    const timer = setTimeout(() => {
      if (!waiting) return;
      waiting = false;
      hold.shrink(bytes);
      resolve(false);
    }, Math.max(0, ms));
    // `charge(0)` asks again without counting more: room, or this batch is the oldest held now.
    const again = (): void => {
      if (!waiting) return;
      if (!hold.charge(0)) {
        hold.whenRoom(again);
        return;
      }
      waiting = false;
      clearTimeout(timer);
      resolve(true);
    };
    hold.whenRoom(again);
  });
}

type BodyRead = { body: JsonObject; hold: BudgetHold | undefined } | { sent: FastifyReply };

/** The coaching request as a JSON object, its tree's room held first; otherwise the answer already sent. */
async function coachingBody(app: FastifyInstance, { runtime, req, reply }: Call): Promise<BodyRead> {
  const invalid = (issue: ValidationIssue): BodyRead => ({ sent: send422(reply, [issue]) });
  const text = typeof req.body === 'string' ? req.body : '';
  const hold = holdOf(req);
  const { admission_timeout_s } = runtime.config.server;
  // The tree and the text written back from it take room before they are built (docs/memory-budget.md#what-is-counted).
  if (hold !== undefined && !(await growWhenRoom(hold, coachingObjectsEstimate(text), admission_timeout_s * 1000 - reply.elapsedTime))) {
    app.gateway.metrics.admissionTimeouts.inc();
    return { sent: reply.code(503).headers(overBudgetHeaders()).send(overBudgetBody(admission_timeout_s)) };
  }
  // A client that left while it waited released its hold: nothing is built or forwarded for it.
  if (reply.raw.destroyed) return { sent: reply };
  let parsed: ExactParse;
  try {
    // Bounded before stripGatewayTags, findTarget and stringifyExact walk it (docs/protocol-fidelity.md#limits).
    parsed = parseExact(text, { maxDepth: runtime.config.server.max_json_depth });
  } catch (err) {
    if (err instanceof JsonDepthError) {
      return invalid({ type: 'json_invalid', loc: ['body'], msg: err.message, input: {} });
    }
    const msg = err instanceof JsonSyntaxError ? err.message : 'invalid JSON';
    const pos = err instanceof JsonSyntaxError ? err.position : 0;
    return invalid({ type: 'json_invalid', loc: ['body', pos], msg: `JSON decode error: ${msg}`, input: {} });
  }
  const body = parsed.value;
  if (!isJsonObject(body)) {
    return invalid({ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: null });
  }
  return { body, hold };
}

async function coach(app: FastifyInstance, affinity: SessionAffinity, c: Call): Promise<FastifyReply> {
  const { runtime, agent, req, reply, span } = c;
  const compiled = agent.routes;
  const read = await coachingBody(app, c);
  if ('sent' in read) return read.sent;
  const { body, hold } = read;
  const target = findTarget(body, compiled.memoryKey);
  if ('loc' in target) return send422(reply, [target]);
  const capable = coachingBackends(runtime, agent);
  if (capable.length === 0) return unavailable(reply, NO_COACHING);

  // A tag naming a backend the config no longer has cannot be followed: the rules decide, as in plan.ts.
  const tagged = target.tag !== undefined && compiled.backends.has(target.tag.backend) ? target.tag : undefined;
  const requestId = typeof body.request_id === 'string' ? body.request_id : '';
  const canServe = (b: string): boolean => runtime.upstreams.canServe(b);
  const coaches = (b: string): boolean => capable.includes(b);
  const chosen = tagged ?? ruleBackend(compiled, target.input, requestId, req.headers, canServe, coaches);
  const backend = chosen.backend;
  const via = tagged !== undefined ? 'memory tag' : `route ${chosen.route}`;
  if (!capable.includes(backend)) return unavailable(reply, `backend ${backend} (chosen by ${via}) does not offer coaching`);
  const runId = runIdOf(body);
  const replica = affinity.pick(runtime, backend, runId);
  if (replica === undefined) return unavailable(reply, `backend ${backend} (chosen by ${via}) has no ready replica offering coaching`);

  const stripped = stripGatewayTags(body, compiled.memoryKey);
  const headers = coachingHeaders(req.headers, true);
  if (span.recording) {
    span.set({
      [ATTR_REQUEST_ID]: requestId,
      [ATTR_RUN_ID]: runId,
      [ATTR_BACKEND]: backend,
      [ATTR_VIA]: via,
      [ATTR_X_REQUEST_ID]: [headers['x-request-id']],
    });
  }
  const gone = clientGone(reply);
  const r = await forward(replica, {
    method: 'POST',
    path: '/v1/coaching',
    body: stringifyExact(body),
    headers,
    timeoutMs: runtime.upstreams.timeoutMs(backend),
    signal: gone.signal,
    memory: hold,
  }, span);
  gone.done();
  req.log.info(
    { run_id: runId, agent: agent.name, backend, replica: replica.id, via, target_step: target.stepIndex, tags_stripped: stripped, status: r.status },
    'coaching request',
  );
  reply.header('x-request-id', headers['x-request-id']);
  if (!r.ok) return reply.code(r.status).send(errorBody('GATEWAY_ERR_COACHING_BACKEND', `backend ${backend}: ${r.message}`));
  reply.code(r.status);
  if (r.contentType !== undefined) reply.header('content-type', r.contentType);
  return reply.send(r.body);
}

/** Each call counts as in flight on the runtime it started on, so a config reload drains it (runtime.ts). */
async function onRuntime<R extends FastifyRequest>(
  app: FastifyInstance,
  name: string | undefined,
  req: R,
  reply: FastifyReply,
  start: CoachingSpanStart,
  fn: (call: Call<R>) => Promise<FastifyReply>,
): Promise<FastifyReply> {
  const runtime = app.gateway.current;
  runtime.enter();
  const span = runtime.tracing.server(start.name, req.headers, start.attributes);
  try {
    const agent = runtime.agent(name);
    if (agent === undefined) return sendUnknownAgent(reply, name);
    const answered = await fn({ runtime, agent, req, reply, span });
    if (span.recording) traceCoachingStatus(span, reply.statusCode);
    return answered;
  } catch (err) {
    if (span.recording) traceCoachingStatus(span, 500);
    throw err;
  } finally {
    span.end();
    runtime.leave();
  }
}

async function coachingRoutes(app: FastifyInstance): Promise<void> {
  // Bodies checked as bytes, as the batch path checks them: decoding to a string first would turn bytes that
  // are not UTF-8 into U+FFFD and forward text the client never sent (docs/limits-and-edges.md).
  budgetedBodies(app, app.initialConfig.bodyLimit ?? 1024 * 1024, (body) => {
    if (isUtf8(body)) return body.toString('utf8');
    const offset = firstInvalidUtf8(body);
    throw new GatewayError('GATEWAY_ERR_BODY_ENCODING', `There was an error parsing the body: it is not valid UTF-8 (byte ${offset})`);
  });
  // Per gateway process, across config reloads (replicas are remembered by url): see coaching/backends.ts.
  const affinity = new SessionAffinity();
  for (const prefix of ['', AGENT_PREFIX_PATTERN]) {
    const agentOf = (params: Partial<AgentParams>): string | undefined => (prefix === '' ? undefined : params.agent);
    app.put<{ Params: SessionParams }>(`${prefix}/v1/coaching/sessions/:run_id`, (req, reply) =>
      onRuntime(app, agentOf(req.params), req, reply, COACHING_SPANS.PUT, (c) => session(c, affinity, 'PUT')),
    );
    app.delete<{ Params: SessionParams }>(`${prefix}/v1/coaching/sessions/:run_id`, (req, reply) =>
      onRuntime(app, agentOf(req.params), req, reply, COACHING_SPANS.DELETE, (c) => session(c, affinity, 'DELETE')),
    );
    app.post<{ Params: Partial<AgentParams> }>(`${prefix}/v1/coaching`, (req, reply) =>
      onRuntime(app, agentOf(req.params), req, reply, COACHING_SPANS.coach, (c) => coach(app, affinity, c)),
    );
  }
}

export default coachingRoutes;
