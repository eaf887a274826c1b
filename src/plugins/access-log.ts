/**
 * One info line per 4xx answer that fastify produces (404, 405, 413, 401, a refused coaching call, ...), so an
 * operator sees why a client was turned away: per-request logging is otherwise off (app.ts) and a batch
 * writes its own line. Answers of POST /v1/responses made on the raw front (http/batch-front.ts) are logged
 * there, with the same line (http/front-rules.ts).
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ACCESS_LOG_MESSAGE, accessLogLine, logsAnswer } from '../http/front-rules.js';
import { clientLabelOf } from '../http/request-client.js';

async function accessLog(app: FastifyInstance): Promise<void> {
  app.addHook('onResponse', async (req, reply) => {
    const status = reply.statusCode;
    if (!logsAnswer(status)) return;
    req.log.info(
      accessLogLine(req.raw, req.url, status, req.routeOptions.url ?? null, clientLabelOf(req.raw), reply.elapsedTime),
      ACCESS_LOG_MESSAGE,
    );
  });
}

export default fp(accessLog, { name: 'magma-gateway-access-log', fastify: '5.x' });
