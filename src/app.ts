/**
 * Builds the gateway's Fastify app without listening (house style: the entry point listens).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { buildAdminApp } from './admin-app.js';
import { mbToBytes, type GatewayConfig } from './config/schema.js';
import { loggerOptions } from './logging.js';
import accessLogPlugin from './plugins/access-log.js';
import authPlugin from './plugins/auth.js';
import clientKeysPlugin from './plugins/client-keys.js';
import gatewayPlugin from './plugins/gateway.js';
import { frameworkErrors, installHttpErrors } from './plugins/http-errors.js';
import { countAnswers } from './plugins/http-metrics.js';
import { settleReloads } from './reload.js';
import { identityRoutes } from './routes/identity.js';
import { metricsRoute } from './routes/metrics.js';
import { drainHeaders } from './http/front-rules.js';
import { createFrontServer, type FrontHost } from './http/batch-front.js';
import { clientLabelOf, rewriteKeyUrl } from './http/request-client.js';
import { responsesRoute } from './routes/responses.js';
import { budgetedBodies } from './http/budgeted-body.js';
import { Drain } from './shutdown.js';

/** The one field of package.json the gateway reads (its version in /v1/info and the overview). */
const PACKAGE_JSON = z.object({ version: z.string() });

export const PACKAGE_VERSION: string = PACKAGE_JSON.parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))).version;

interface BuildOptions {
  config: GatewayConfig;
  configPath?: string;
  logger?: FastifyServerOptions['logger'];
  probeOnStart?: boolean;
  defaultMetrics?: boolean;
}

export async function buildApp(opts: BuildOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const bodyLimit = mbToBytes(config.server.body_limit_mb);
  // The server's own bounds (receive time, idle time, connections) are set on the front server
  // (http/batch-front.ts); these are what fastify would set on a server it created itself.
  const timeouts = { keepAliveTimeout: Math.round(config.server.keep_alive_timeout_s * 1000), requestTimeout: 0 };
  // Filled in once every route is registered (below); until then the front leaves everything to fastify.
  const front: { host?: FrontHost } = {};
  let closing = false;
  const drain = new Drain();
  const app = Fastify({
    logger: opts.logger ?? loggerOptions(config.log_level),
    bodyLimit,
    // One log line per batch is written by the route itself; per-request lines would double it.
    logController: new LogController({ disableRequestLogging: true }),
    ...timeouts,
    return503OnClosing: true,
    // A path fastify's router refuses (a bad % escape) answered in the gateway's error shape.
    frameworkErrors,
    // POST /v1/responses is answered before fastify (http/batch-front.ts); the rest goes to fastify.
    serverFactory: (handler) => createFrontServer(handler, () => front.host, config.server),
    // A client key in the address (`/k/<key>/...`, docs/operations.md#client-keys) is not part of the path fastify
    // routes; the listening front strips it first, this covers requests that skip the front (app.inject).
    rewriteUrl: rewriteKeyUrl,
  });
  app.decorate('drain', drain);
  // From here on the front leaves every request to fastify, which answers 503 while closing.
  app.addHook('preClose', async () => {
    closing = true;
  });

  // 404, 405 with Allow, 413 and 500 as JSON; before any route, so every route's path is known to the 405 check.
  installHttpErrors(app, config.server.body_limit_mb, () => mbToBytes(app.gateway.current.config.server.body_discard_mb));

  await app.register(gatewayPlugin, {
    config,
    version: PACKAGE_VERSION,
    configPath: opts.configPath,
    probeOnStart: opts.probeOnStart,
    defaultMetrics: opts.defaultMetrics,
  });

  // Before any route: client keys on every agent endpoint when clients: is configured, and the admin token
  // on /metrics when admin.protect_metrics is set.
  await app.register(clientKeysPlugin);
  await app.register(authPlugin, { listener: 'agent' });
  await app.register(accessLogPlugin);

  // Cross-cutting: every answer counted and timed by endpoint (the URL path pattern) and client.
  countAnswers(app, (req) => clientLabelOf(req.raw));

  // Draining for shutdown (src/shutdown.ts): the connection ends with this answer.
  app.addHook('onSend', async (_req, reply, payload) => {
    const close = drainHeaders(drain.draining);
    if (close !== undefined) reply.headers(close);
    return payload;
  });

  // Every body read (coaching and the rest) is held under the memory budget (http/budgeted-body.ts). Bodies
  // stay text: the exact JSON codec parses them (numbers kept exactly), and a non-JSON or missing content type
  // is still answered with a 422 naming the problem rather than fastify's 415.
  budgetedBodies(app, bodyLimit, 'string');

  await app.register(identityRoutes, { draining: () => drain.draining });
  await app.register(responsesRoute);
  await app.register(metricsRoute);
  await app.register(import('./routes/coaching.js'));

  // By the time onClose hooks run the server has stopped and its requests are answered; a reload in progress
  // (SIGHUP or the admin API) must not swap in a runtime after the gateway plugin closed the current one, and
  // replaced runtimes must have closed their pools before the process exits. (In a child context, so it runs
  // before the gateway plugin's onClose.)
  await app.register(async (child) => {
    child.addHook('onClose', async () => {
      await settleReloads(app.gateway);
    });
  });

  // The admin API and passthrough live on their own listener (admin-app.ts), or nowhere.
  const admin = config.admin.listen === undefined ? null : await buildAdminApp(app);
  app.decorate('adminApp', admin);
  if (admin !== null) {
    app.addHook('onReady', async () => {
      await admin.ready();
    });
    // First: admin requests (a reload, a passthrough) finish while the agent port still serves its batches.
    app.addHook('preClose', async () => {
      await admin.close();
    });
  }
  front.host = {
    gateway: app.gateway,
    log: app.log,
    bodyLimit,
    bodyLimitMb: config.server.body_limit_mb,
    closing: () => closing,
    draining: () => drain.draining,
  };
  return app;
}
