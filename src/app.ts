/** The gateway's agent listener, built without listening: the batch front, fastify behind it (docs/architecture.md). */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { buildAdminApp } from './admin-app.js';
import { mbToBytes, type GatewayConfig } from './config/schema.js';
import { loggerOptions } from './logging.js';
import authPlugin from './plugins/auth.js';
import clientKeysPlugin from './plugins/client-keys.js';
import gatewayPlugin from './plugins/gateway.js';
import { countAnswers, frameworkErrors, installHttpErrors } from './plugins/http-errors.js';
import { AGENT_BATCH_ENDPOINT, BATCH_ENDPOINT } from './metrics.js';
import { settleReloads } from './reload.js';
import { identityRoutes } from './routes/identity.js';
import { drainHeaders, logAnswer } from './http/front-rules.js';
import { BatchFront } from './http/batch-front.js';
import { clientLabelOf, rewriteKeyUrl } from './http/request-client.js';
import { budgetedBodies } from './http/budgeted-body.js';
import { lingerBounds } from './http/lingering-close.js';
import { Drain } from './shutdown.js';

declare module 'fastify' {
  interface FastifyInstance {
    front: BatchFront;
  }
}

const PACKAGE_JSON = z.object({ version: z.string() });

export const PACKAGE_VERSION: string = PACKAGE_JSON.parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))).version;

interface BuildOptions {
  config: GatewayConfig;
  configPath?: string;
  /** How a reload reads the config again, as the start did (the CLI amends the file); by default the file alone. */
  loadConfig?: () => GatewayConfig;
  logger?: FastifyServerOptions['logger'];
  probeOnStart?: boolean;
  defaultMetrics?: boolean;
}

export async function buildApp(opts: BuildOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const bodyLimit = mbToBytes(config.server.body_limit_mb);
  const front = new BatchFront(config.server);
  let closing = false;
  const drain = new Drain();
  const app = Fastify({
    logger: opts.logger ?? loggerOptions(config.log_level),
    bodyLimit,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    frameworkErrors,
    serverFactory: (handler) => front.createServer(handler),
    rewriteUrl: rewriteKeyUrl,
  });
  app.decorate('drain', drain);
  app.decorate('front', front);
  app.addHook('preClose', async () => {
    closing = true;
  });

  // Before any route, so every route's path is known to the 405 check; fastify answers the batch paths' other methods.
  installHttpErrors(app, config.server.body_limit_mb, () => lingerBounds(app.gateway.current.config.server), [
    { url: BATCH_ENDPOINT, method: 'POST' },
    { url: AGENT_BATCH_ENDPOINT, method: 'POST' },
  ]);

  await app.register(gatewayPlugin, {
    config,
    version: PACKAGE_VERSION,
    configPath: opts.configPath,
    loadConfig: opts.loadConfig,
    probeOnStart: opts.probeOnStart,
    defaultMetrics: opts.defaultMetrics,
  });

  // Before any route.
  await app.register(clientKeysPlugin);
  await app.register(authPlugin, { listener: 'agent' });
  // The access-log line (http/front-rules.ts's policy: every 4xx and 503) of each answer fastify makes.
  app.addHook('onResponse', async (req, reply) => {
    logAnswer(req.log, req.raw, {
      url: req.url,
      status: reply.statusCode,
      route: req.routeOptions.url ?? null,
      client: clientLabelOf(req.raw),
      ms: reply.elapsedTime,
    });
  });

  countAnswers(app, (req) => clientLabelOf(req.raw));

  app.addHook('onSend', async (_req, reply, payload) => {
    const close = drainHeaders(drain.draining);
    if (close !== undefined) reply.headers(close);
    return payload;
  });

  // Bodies stay text: the exact JSON codec parses them, and a non-JSON content type gets a 422, not fastify's 415.
  budgetedBodies(app, bodyLimit, 'string');

  await app.register(identityRoutes, { draining: () => drain.draining });
  // Prometheus text format (docs/operations.md#metrics).
  app.get('/metrics', async (_req, reply) => {
    const { registry } = app.gateway.metrics;
    return reply.header('content-type', registry.contentType).send(await registry.metrics());
  });
  await app.register(import('./routes/coaching.js'));

  // A reload in progress must not swap in a runtime after the gateway plugin closed the current one. In a child
  // context, so it runs before the gateway plugin's onClose.
  await app.register(async (child) => {
    child.addHook('onClose', async () => {
      await settleReloads(app.gateway);
    });
  });

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
