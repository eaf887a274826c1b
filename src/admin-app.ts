/** The admin listener (docs/operations.md#admin-api): apart from the agent port, as Envoy's. */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { mbToBytes, parseHostPort } from './config/schema.js';
import { ANONYMOUS_CLIENT } from './metrics.js';
import adminGuard from './plugins/admin-guard.js';
import authPlugin from './plugins/auth.js';
import { countAnswers, frameworkErrors, installHttpErrors } from './plugins/http-errors.js';
import { clientError } from './http/batch-front.js';
import { adminRoutes } from './routes/admin.js';
import { experimentsRoute } from './routes/experiments.js';
import { consoleFiles, consolePaths } from './admin/console-assets.js';
import { consoleRoutes } from './routes/console.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Set on the agent app only. */
    adminApp: FastifyInstance | null;
  }
}

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
    frameworkErrors,
    clientErrorHandler: (err, socket) => clientError(config.server, err, socket),
  });
  admin.decorate('gateway', main.gateway);
  installHttpErrors(admin, config.server.body_limit_mb);
  admin.removeAllContentTypeParsers();
  admin.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  // Before the token: a page in the operator's browser is refused whatever it holds (docs/operations.md#admin-security).
  await admin.register(adminGuard);
  // The console's built files are open (they hold no data); their list is read once, as @fastify/static does.
  await admin.register(authPlugin, { listener: 'admin', open: consolePaths(consoleFiles()) });
  countAnswers(admin, () => ANONYMOUS_CLIENT);
  await admin.register(adminRoutes, { main });
  await admin.register(experimentsRoute);
  await admin.register(consoleRoutes, { listeners: () => ({
      agent: serverUrl(main, main.gateway.current.config.server.tls === undefined ? 'http' : 'https'),
      admin: serverUrl(admin, 'http'),
    }), });
  return admin;
}

function serverUrl(app: FastifyInstance, scheme: 'http' | 'https'): string | null {
  const addr = app.server.listening ? app.server.address() : null;
  if (addr === null || typeof addr !== 'object') return null;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `${scheme}://${host}:${addr.port}`;
}

/** The URL it bound (port 0 picks a port), or undefined without an admin listener. */
export async function listenAdmin(app: FastifyInstance): Promise<string | undefined> {
  const listen = app.gateway.current.config.admin.listen;
  const at = listen === undefined ? undefined : parseHostPort(listen);
  if (app.adminApp === null || at === undefined) return undefined;
  await app.adminApp.listen({ host: at.host, port: at.port });
  const addr = app.adminApp.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : at.port;
  return `http://${at.host.includes(':') ? `[${at.host}]` : at.host}:${port}`;
}
