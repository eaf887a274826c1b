/** The access-log line (http/front-rules.ts's policy: every 4xx and 503) of each answer fastify makes. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { logAnswer } from '../http/front-rules.js';
import { clientLabelOf } from '../http/request-client.js';

async function accessLog(app: FastifyInstance): Promise<void> {
  app.addHook('onResponse', async (req, reply) => {
    logAnswer(req.log, req.raw, {
      url: req.url,
      status: reply.statusCode,
      route: req.routeOptions.url ?? null,
      client: clientLabelOf(req.raw),
      ms: reply.elapsedTime,
    });
  });
}

export default fp(accessLog, { name: 'magma-gateway-access-log', fastify: '5.x' });
