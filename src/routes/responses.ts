/**
 * POST /v1/responses and POST /agents/<name>/v1/responses (docs/routing.md#virtual-agents) as fastify routes (docs/protocol-fidelity.md#the-path-of-a-batch).
 * The listening server answers these paths on its raw
 * front (http/batch-front.ts) without entering fastify; this route serves what reaches fastify anyway:
 * `app.inject()`, and requests the front leaves to fastify (a query string, a gateway that is closing).
 * Both call the same handleBatch.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { onClientGone } from '../abort.js';
import { answerHeaders, handleBatch } from '../batch/handle-batch.js';
import { clientNameOf } from '../http/request-client.js';
import { AGENT_BATCH_PATTERN, BATCH_PATH, type AgentParams } from '../http/agent-path.js';
import { bodyLength, mayStream, ResponseWriter, sendable } from '../http/answer-write.js';
import { budgetedBodies, holdOf, receivedBodyOf } from '../http/budgeted-body.js';
import { OVERHEAD_HEADER, overheadValue } from '../http/front-rules.js';

export async function responsesRoute(app: FastifyInstance): Promise<void> {
  // In this route's scope the body stays raw bytes: hashed for replay and, when a sub-request is the whole
  // request, forwarded as is, so megabytes are never re-encoded. It is decoded once for parsing.
  // Read under the memory budget, as on the raw front (http/budgeted-body.ts).
  budgetedBodies(app, app.initialConfig.bodyLimit ?? 1024 * 1024, 'received');

  // Only batch answers carry the gateway's own time; this covers the ones handleBatch does not make (413).
  app.addHook('onSend', async (_req, reply, payload) => {
    if (!reply.hasHeader(OVERHEAD_HEADER)) reply.header(OVERHEAD_HEADER, overheadValue(reply.elapsedTime));
    return payload;
  });

  const batch = async (agent: string | undefined, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const a = await handleBatch(app.gateway, {
      agent,
      body: receivedBodyOf(req.body),
      headers: req.headers,
      log: req.log,
      onClientGone: (fn) => onClientGone(reply.raw, fn),
      // Decided by the client-keys hook (plugins/client-keys.ts) before this handler runs.
      client: clientNameOf(req.raw),
      memory: holdOf(req),
      // A streamed answer is written on the raw response, past fastify's send pipeline.
      stream: mayStream(req.raw) ? new ResponseWriter(reply.raw, () => reply.hijack(), () => undefined) : undefined,
    });
    if (a.streamed === true) return reply;
    return reply
      .code(a.status)
      .headers(answerHeaders(a, reply.elapsedTime))
      .header('content-type', 'application/json')
      .header('content-length', String(bodyLength(a.body)))
      .send(sendable(a.body));
  };
  app.post(BATCH_PATH, (req, reply) => batch(undefined, req, reply));
  // A virtual agent's batches (docs/routing.md#virtual-agents); handleBatch answers 404 for a name the config lacks.
  app.post<{ Params: AgentParams }>(AGENT_BATCH_PATTERN, (req, reply) => batch(req.params.agent, req, reply));
}
