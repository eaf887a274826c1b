/**
 * POST /v1/responses: AgentRequest -> AgentResponse through the gateway (DESIGN.md §2).
 * Only an invalid request gets an HTTP error (422); backend failures become error candidates (§5).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { runBatch } from '../dispatch/batch.js';
import { startShadows } from '../dispatch/shadow.js';
import { stringifyExact } from '../protocol/exact-json.js';
import { parseAgentRequest } from '../protocol/request.js';
import { validateAgainstRequest } from '../protocol/response-check.js';
import type { ValidationIssue } from '../protocol/types.js';
import { planBatch } from '../routing/plan.js';
import { hashBody, type ReplayLease } from '../state/index.js';
import { utf8Exceeds } from '../state/util.js';

export function send422(reply: FastifyReply, detail: ValidationIssue[]): FastifyReply {
  return reply.code(422).header('content-type', 'application/json').send(stringifyExact({ detail }));
}

function backendHeaders(req: FastifyRequest): Record<string, string> {
  const h: Record<string, string> = {};
  const rid = req.headers['x-request-id'];
  h['x-request-id'] = typeof rid === 'string' && rid.length > 0 ? rid : randomUUID();
  // W3C trace context: a valid incoming traceparent is passed on, otherwise the batch starts a trace of its own.
  const tp = req.headers['traceparent'];
  h['traceparent'] = typeof tp === 'string' && TRACEPARENT.test(tp) ? tp : newTraceparent();
  return h;
}

/** Version (not ff), trace id and parent id (neither all zeros), flags: https://www.w3.org/TR/trace-context/ */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** randomUUID draws from a buffered entropy pool: much cheaper per batch than two randomBytes calls. */
function newTraceparent(): string {
  const trace = randomUUID().replace(/-/g, '');
  const span = randomUUID().replace(/-/g, '').slice(0, 16);
  return `00-${trace}-${span}-01`;
}

export async function responsesRoute(app: FastifyInstance): Promise<void> {
  // In this route's scope the body stays raw bytes: hashed for replay and, when a sub-request is the whole
  // request, forwarded as is, so megabytes are never re-encoded. It is decoded once for parsing.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.post('/v1/responses', async (req, reply) => {
    const t0 = performance.now();
    const runtime = app.gateway.current;
    const { config } = runtime;
    const { metrics, store } = app.gateway;
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const text = raw.toString('utf8');
    const parsed = parseAgentRequest(text, { maxOutputsPerInput: config.server.max_outputs_per_input });
    if (!parsed.ok) {
      req.log.info({ problems: parsed.detail.length, first: parsed.detail[0]?.loc }, 'invalid AgentRequest');
      return send422(reply, parsed.detail);
    }
    const { request } = parsed;
    if (request.inputs.length === 0) return reply.header('content-type', 'application/json').send('[]');

    const headers = backendHeaders(req);
    reply.header('x-request-id', headers['x-request-id']!);
    const deadline = Date.now() + config.request_timeout_s * 1000;
    const ac = new AbortController();
    // The response stream closing before we wrote it means the client went away: stop the backends' work.
    // (The request stream's own 'close' fires as soon as its body is read, so it cannot tell us that.)
    let clientGone = false;
    const onClose = (): void => {
      if (reply.raw.writableEnded) return;
      clientGone = true;
      ac.abort();
    };
    reply.raw.once('close', onClose);
    // The batch deadline aborts whatever is still waiting (a replay wait, a permit queue, backend calls).
    const deadlineTimer = setTimeout(() => ac.abort(), deadline - Date.now());

    // Idempotent replay (issue 5): a re-sent identical batch is answered from the stored response, and one
    // still being computed (here or on another gateway replica) is waited for instead of computed twice.
    let lease: ReplayLease | undefined;
    if (config.state.replay_ttl_s > 0) {
      const begin = await store.replayBegin(request.request_id, hashBody(raw), ac.signal);
      if (begin.kind === 'hit') {
        metrics.replay.inc({ outcome: 'hit' });
        reply.raw.off('close', onClose);
        clearTimeout(deadlineTimer);
        req.log.info({ request_id: request.request_id, inputs: request.inputs.length }, 'batch replayed');
        return reply.header('content-type', 'application/json').header('x-gateway-replay', 'hit').send(begin.body);
      }
      if (begin.kind === 'conflict') metrics.replayConflicts.inc();
      if (begin.kind === 'compute') {
        metrics.replay.inc({ outcome: 'miss' });
        lease = begin.lease;
      }
    }

    runtime.enter();
    try {
      const plan = planBatch(request, runtime.routes, runtime.upstreams, { headers: req.headers });
      const beforeDispatch = performance.now();
      const batch = runBatch(
        {
          upstreams: runtime.upstreams,
          budget: runtime.budget,
          store,
          metrics,
          log: req.log,
          memoryKey: config.memory_key,
        },
        request,
        plan,
        { deadline, headers, signal: ac.signal, clientGone: () => clientGone, requestBody: raw },
        parsed.marked,
      );
      if (plan.inputs.some((p) => p.shadows.length > 0)) {
        // Detached: the answer never waits for a shadow (see dispatch/shadow.ts).
        void startShadows(
          { upstreams: runtime.upstreams, metrics, log: req.log, memoryKey: config.memory_key, limiter: runtime.shadows },
          request,
          plan,
          parsed.marked,
          batch.then((r) => r.outputs),
        );
      }
      const result = await batch;
      app.gateway.experiments.recordBatch(request, plan, result);
      reply.raw.off('close', onClose);
      const t2 = performance.now();
      // Checked against the request before it is sent, every time (DESIGN.md §2 step 6).
      const problem = validateAgainstRequest(request, result.outputs);
      if (problem !== undefined) throw new Error(`assembled response violates the contract order: ${problem}`);
      const body = stringifyExact(result.outputs, result.marked);
      const overheadMs = beforeDispatch - t0 + result.workMs + (performance.now() - t2);
      metrics.overhead.observe(overheadMs / 1000);
      if (lease !== undefined) {
        if (utf8Exceeds(body, config.state.replay_max_bytes)) metrics.replay.inc({ outcome: 'too_large' });
        // Stored in the background: the client's answer never waits on the store.
        const done = lease;
        lease = undefined;
        done.finish(body).catch((err: unknown) => req.log.warn({ err }, 'replay store failed'));
      }
      req.log.info(
        {
          request_id: request.request_id,
          inputs: request.inputs.length,
          candidates: result.outputs.length,
          routes: countBy(plan.inputs.map((p) => p.route)),
          backends: result.backends,
          error_codes: result.errorCodes,
          duration_ms: Math.round(performance.now() - t0),
          overhead_ms: Math.round(overheadMs * 100) / 100,
          body_bytes: raw.length,
        },
        'batch',
      );
      return reply
        .header('content-type', 'application/json')
        .header('x-gateway-overhead-ms', overheadMs.toFixed(2))
        .send(body);
    } finally {
      clearTimeout(deadlineTimer);
      runtime.leave();
      // A batch that did not complete lets a waiting duplicate compute instead of waiting for nothing.
      if (lease !== undefined) void lease.abandon().catch(() => undefined);
    }
  });
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
