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

export function send422(reply: FastifyReply, detail: ValidationIssue[]): FastifyReply {
  return reply.code(422).header('content-type', 'application/json').send(stringifyExact({ detail }));
}

function backendHeaders(req: FastifyRequest): Record<string, string> {
  const h: Record<string, string> = {};
  const rid = req.headers['x-request-id'];
  h['x-request-id'] = typeof rid === 'string' && rid.length > 0 ? rid : randomUUID();
  const tp = req.headers['traceparent'];
  if (typeof tp === 'string') h['traceparent'] = tp;
  return h;
}

export async function responsesRoute(app: FastifyInstance): Promise<void> {
  app.post('/v1/responses', async (req, reply) => {
    const t0 = performance.now();
    const runtime = app.gateway.current;
    const { config } = runtime;
    const text = typeof req.body === 'string' ? req.body : '';
    const parsed = parseAgentRequest(text, { maxOutputsPerInput: config.server.max_outputs_per_input });
    if (!parsed.ok) {
      req.log.info({ problems: parsed.detail.length, first: parsed.detail[0]?.loc }, 'invalid AgentRequest');
      return send422(reply, parsed.detail);
    }
    const { request } = parsed;
    if (request.inputs.length === 0) return reply.header('content-type', 'application/json').send('[]');

    runtime.enter();
    try {
      const plan = planBatch(request, runtime.routes, runtime.upstreams, { headers: req.headers });
      const headers = backendHeaders(req);
      reply.header('x-request-id', headers['x-request-id']!);
      const ac = new AbortController();
      // The response stream closing before we wrote it means the client went away: stop the backends' work.
      // (The request stream's own 'close' fires as soon as its body is read, so it cannot tell us that.)
      const onClose = (): void => {
        if (!reply.raw.writableEnded) ac.abort();
      };
      reply.raw.once('close', onClose);
      const beforeDispatch = performance.now();
      const deadline = Date.now() + config.request_timeout_s * 1000;
      const batch = runBatch(
        { upstreams: runtime.upstreams, budget: runtime.budget, metrics: app.gateway.metrics, log: req.log, memoryKey: config.memory_key },
        request,
        plan,
        { deadline, headers, signal: ac.signal },
        parsed.marked,
      );
      if (plan.inputs.some((p) => p.shadows.length > 0)) {
        // Detached: the answer never waits for a shadow (see dispatch/shadow.ts).
        void startShadows(
          { upstreams: runtime.upstreams, metrics: app.gateway.metrics, log: req.log, memoryKey: config.memory_key, limiter: runtime.shadows },
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
      app.gateway.metrics.overhead.observe(overheadMs / 1000);
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
          body_bytes: text.length,
        },
        'batch',
      );
      return reply
        .header('content-type', 'application/json')
        .header('x-gateway-overhead-ms', overheadMs.toFixed(2))
        .send(body);
    } finally {
      runtime.leave();
    }
  });
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
