/**
 * The operator API under /gateway/ (README "Admin API"). Read-only views of the runtime current at the request, the
 * reload
 * trigger, and the passthrough to backends. Protection (the optional bearer token) is the auth plugin's job: it
 * covers every /gateway/* path, these and any other plugin's.
 *
 *   GET  /gateway/backends              each replica: url, state, last probe, info, in flight, last error
 *   GET  /gateway/routes                the routes as compiled, with which of their backends are ready
 *   GET  /gateway/config                the running config, secrets redacted (admin/redact.ts)
 *   POST /gateway/reload                re-read the config file: 200 {"reloaded": true, ...} or 400 with the reason
 *   ANY  /gateway/backends/{name}/...   forwarded to a ready replica of that backend (admin/passthrough.ts)
 */
import type { FastifyInstance } from 'fastify';
import { passthrough } from '../admin/passthrough.js';
import { redactConfig } from '../admin/redact.js';
import { backendsView, routesView } from '../admin/views.js';
import { reloadGateway, settleReloads } from '../reload.js';

export async function adminRoutes(app: FastifyInstance): Promise<void> {
  app.get('/gateway/backends', async () => ({ backends: backendsView(app.gateway.current) }));

  app.get('/gateway/routes', async () => ({ routes: routesView(app.gateway.current) }));

  app.get('/gateway/config', async () => ({
    config_path: app.gateway.configPath ?? null,
    config: redactConfig(app.gateway.current.config),
  }));

  app.post('/gateway/reload', async (_req, reply) => {
    const outcome = await reloadGateway(app, 'api');
    if (outcome.ok) return outcome.report;
    return reply.code(outcome.status).send({ reloaded: false, detail: outcome.detail });
  });

  // By the time onClose hooks run the server has stopped and its requests are answered; a reload in progress
  // must not swap in a runtime after the gateway plugin closed the current one, and replaced runtimes must
  // have closed their pools before the process exits. (Registered after the gateway plugin, so it runs first.)
  app.addHook('onClose', async () => {
    await settleReloads(app.gateway);
  });

  await app.register(passthrough);
}
