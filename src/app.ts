/**
 * Builds the gateway's Fastify app without listening (house style: the entry point listens).
 */
import { readFileSync } from 'node:fs';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { GatewayConfig } from './config/schema.js';
import { loggerOptions } from './logging.js';
import accessLogPlugin from './plugins/access-log.js';
import authPlugin from './plugins/auth.js';
import gatewayPlugin from './plugins/gateway.js';
import { adminRoutes } from './routes/admin.js';
import { experimentsRoute } from './routes/experiments.js';
import { identityRoutes } from './routes/identity.js';
import { metricsRoute } from './routes/metrics.js';
import { createFrontServer, type FrontHost } from './routes/batch-front.js';
import { responsesRoute } from './routes/responses.js';

export const PACKAGE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export interface BuildOptions {
  config: GatewayConfig;
  configPath?: string;
  logger?: FastifyServerOptions['logger'];
  probeOnStart?: boolean;
  defaultMetrics?: boolean;
}

export async function buildApp(opts: BuildOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const bodyLimit = Math.floor(config.server.body_limit_mb * 1024 * 1024);
  // Let clients send keep-alive batches minutes apart (BENCH waits for a whole simulator step).
  const timeouts = { keepAliveTimeout: 72_000, requestTimeout: 0 };
  // Filled in once every route is registered (below); until then the front leaves everything to fastify.
  const front: { host?: FrontHost } = {};
  let closing = false;
  const app = Fastify({
    logger: opts.logger ?? loggerOptions(config.log_level),
    bodyLimit,
    // One log line per batch is written by the route itself; per-request lines would double it.
    logController: new LogController({ disableRequestLogging: true }),
    ...timeouts,
    return503OnClosing: true,
    // POST /v1/responses is answered before fastify (routes/batch-front.ts); the rest goes to fastify.
    serverFactory: (handler) => createFrontServer(handler, () => front.host, timeouts),
  });
  // From here on the front leaves every request to fastify, which answers 503 while closing.
  app.addHook('preClose', async () => {
    closing = true;
  });

  // Bodies stay text: the exact JSON codec parses them (numbers kept exactly), and a non-JSON or missing
  // content type is still answered with a 422 naming the problem rather than fastify's 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) {
      return reply.code(413).send({
        detail: `request body exceeds server.body_limit_mb (${config.server.body_limit_mb} MiB)`,
      });
    }
    if (status >= 500) req.log.error({ err }, 'internal error');
    return reply.code(status).send({ detail: status >= 500 ? 'internal gateway error' : err.message });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ detail: `Not Found: ${req.method} ${req.url}` }));

  await app.register(gatewayPlugin, {
    config,
    version: PACKAGE_VERSION,
    configPath: opts.configPath,
    probeOnStart: opts.probeOnStart,
    defaultMetrics: opts.defaultMetrics,
  });

  // Before any route: the admin token guards every /gateway/* path whichever plugin registers it.
  await app.register(authPlugin);
  await app.register(accessLogPlugin);

  // Cross-cutting: every answer counted and timed by endpoint.
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    app.gateway.metrics.httpRequests.inc({ route, status_code: String(reply.statusCode) });
    app.gateway.metrics.httpDuration.observe({ route }, reply.elapsedTime / 1000);
  });

  // Every answer says how long the gateway itself spent on it. /v1/responses sets its own figure (its time minus
  // the backends'); elsewhere the whole handling time is the gateway's (for the coaching and passthrough
  // proxies it includes the backend's time, which the gateway cannot separate from a streamed answer).
  app.addHook('onSend', async (_req, reply, payload) => {
    if (!reply.hasHeader('x-gateway-overhead-ms')) reply.header('x-gateway-overhead-ms', reply.elapsedTime.toFixed(2));
    return payload;
  });

  await app.register(identityRoutes);
  await app.register(responsesRoute);
  await app.register(metricsRoute);
  await app.register(adminRoutes);
  await app.register(import('./routes/coaching.js'));
  await app.register(experimentsRoute);
  front.host = { gateway: app.gateway, log: app.log, bodyLimit, bodyLimitMb: config.server.body_limit_mb, closing: () => closing };
  return app;
}
