/**
 * Builds the gateway's agent listener without listening (house style: the entry point listens): the batch
 * front (http/batch-front.ts) takes every `POST /v1/responses` on the server it makes, and fastify, behind
 * it, everything else (docs/architecture.md).
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
import { BatchFront } from './http/batch-front.js';
import { AGENT_BATCH_PATTERN, BATCH_PATH } from './http/agent-path.js';
import { clientLabelOf, rewriteKeyUrl } from './http/request-client.js';
import { budgetedBodies } from './http/budgeted-body.js';
import { lingerBounds } from './http/lingering-close.js';
import { Drain } from './shutdown.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The batch front; tests inject batches into its listener (light-my-request), as `inject` does into fastify's router. */
    front: BatchFront;
  }
}

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
  // The hot path: every batch is answered here. It makes the server fastify listens on, and is attached to
  // the app's state at the end, once the gateway plugin has built it.
  const front = new BatchFront(config.server);
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
    serverFactory: (handler) => front.createServer(handler),
    // A client key in the address (`/k/<key>/...`, docs/operations.md#client-keys) is not part of the path fastify
    // routes; the listening front strips it first, this covers requests that skip the front (app.inject).
    rewriteUrl: rewriteKeyUrl,
  });
  app.decorate('drain', drain);
  app.decorate('front', front);
  // From here on the front answers batches 503, and fastify every other request (return503OnClosing).
  app.addHook('preClose', async () => {
    closing = true;
  });

  // 404, 405 with Allow, 413 and 500 as JSON; before any route, so every route's path is known to the 405 check.
  // The batch paths are the front's; fastify answers their other methods (405 with Allow: POST).
  installHttpErrors(app, config.server.body_limit_mb, () => lingerBounds(app.gateway.current.config.server), [
    { url: BATCH_PATH, method: 'POST' },
    { url: AGENT_BATCH_PATTERN, method: 'POST' },
  ]);

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
  front.attach({
    gateway: app.gateway,
    log: app.log,
    bodyLimit,
    bodyLimitMb: config.server.body_limit_mb,
    closing: () => closing,
    draining: () => drain.draining,
  });
  return app;
}
