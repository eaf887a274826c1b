/**
 * The admin listener (README "Admin listener"): a second fastify instance, apart from the agent port the way
 * Envoy keeps its admin port apart, serving the admin API (/gateway/*) and the backend passthrough. It shares
 * the agent app's gateway state (runtime, metrics, store), is built with it when `admin.listen` is set, and is
 * started and closed with it (app.ts); the CLI listens on both. Without `admin.listen` none of it is served.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { mbToBytes, parseHostPort } from './config/schema.js';
import { ANONYMOUS_CLIENT } from './metrics.js';
import authPlugin from './plugins/auth.js';
import { frameworkErrors, installHttpErrors } from './plugins/http-errors.js';
import { clientError } from './routes/batch-front.js';
import { countAnswers } from './plugins/http-metrics.js';
import { adminRoutes } from './routes/admin.js';
import { experimentsRoute } from './routes/experiments.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The admin listener's app, or null when `admin.listen` is not set (set on the agent app only). */
    adminApp: FastifyInstance | null;
  }
}

/** Built by buildApp once the agent app's gateway state exists. */
export async function buildAdminApp(main: FastifyInstance): Promise<FastifyInstance> {
  const { config } = main.gateway.current;
  const admin = Fastify({
    loggerInstance: main.log.child({ listener: 'admin' }),
    // The same limit as the agent port (a batch posted through the passthrough), so the 413 names the right key.
    bodyLimit: mbToBytes(config.server.body_limit_mb),
    logController: new LogController({ disableRequestLogging: true }),
    // Passthrough answers can take as long as a backend call; the same keep-alive as the agent port.
    keepAliveTimeout: 72_000,
    requestTimeout: 0,
    return503OnClosing: true,
    // A path fastify's router refuses (a bad % escape) answered in the gateway's error shape.
    frameworkErrors,
    // Malformed requests and header timeouts in the gateway's error shape, as on the agent port.
    clientErrorHandler: (err, socket) => clientError(config.server, err, socket),
  });
  admin.decorate('gateway', main.gateway);
  installHttpErrors(admin, config.server.body_limit_mb);
  admin.removeAllContentTypeParsers();
  admin.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  await admin.register(authPlugin, { listener: 'admin' });
  // The admin listener takes no client keys: its requests are anonymous to the client label.
  countAnswers(admin, () => ANONYMOUS_CLIENT);
  await admin.register(adminRoutes, { main });
  await admin.register(experimentsRoute);
  return admin;
}

/**
 * Listen on `admin.listen` when the agent app has an admin app; the URL it bound (port 0 picks a port), or
 * undefined without an admin listener.
 */
export async function listenAdmin(app: FastifyInstance): Promise<string | undefined> {
  const listen = app.gateway.current.config.admin.listen;
  const at = listen === undefined ? undefined : parseHostPort(listen);
  if (app.adminApp === null || at === undefined) return undefined;
  await app.adminApp.listen({ host: at.host, port: at.port });
  const addr = app.adminApp.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : at.port;
  return `http://${at.host.includes(':') ? `[${at.host}]` : at.host}:${port}`;
}
