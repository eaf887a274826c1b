/**
 * One info line per 4xx answer that fastify produces (404, 405, 413, 401, a refused coaching call, ...), so an
 * operator sees why a client was turned away: per-request logging is otherwise off (app.ts) and a batch
 * writes its own line. Answers of POST /v1/responses made on the raw front (routes/batch-front.ts) are logged
 * there. Nothing of the body is logged; the path is cut at 256 characters (it comes from the client), and a
 * client key in it (`/k/<key>`) is written as REDACTED.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingMessage } from 'node:http';
import { clientLabelOf, loggableUrl } from '../routes/request-client.js';

const MAX_PATH = 256;

function header(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined ? undefined : s.slice(0, MAX_PATH);
}

/** The path as the client sent it, client keys redacted (docs/operations.md#client-keys), cut to MAX_PATH. */
function pathOf(raw: IncomingMessage, url: string): string {
  const path = loggableUrl(raw, url);
  return path.length > MAX_PATH ? `${path.slice(0, MAX_PATH)}…` : path;
}

async function accessLog(app: FastifyInstance): Promise<void> {
  app.addHook('onResponse', async (req, reply) => {
    const status = reply.statusCode;
    if (status < 400 || status >= 500) return;
    req.log.info(
      {
        status,
        method: req.method,
        path: pathOf(req.raw, req.url),
        route: req.routeOptions.url ?? null,
        request_id: header(req.headers['x-request-id']),
        remote: req.ip,
        client: clientLabelOf(req.raw),
        ms: Number(reply.elapsedTime.toFixed(2)),
      },
      'client error answered',
    );
  });
}

export default fp(accessLog, { name: 'magma-gateway-access-log', fastify: '5.x' });
