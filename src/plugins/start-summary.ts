/** The start log: one summary line, then a warning for each config warning, replica not ready and dead route. */
import type { FastifyInstance } from 'fastify';
import { summarizeConfig } from '../config/summary.js';
import { configWarnings, formatWarning } from '../config/warnings.js';
import { TAG_SECRET_ENV, tagSecretSource } from '../experiments/tag-signer.js';

function listenUrls(app: FastifyInstance): string[] {
  const scheme = app.gateway.current.config.server.tls === undefined ? 'http' : 'https';
  return app
    .addresses()
    .map((a) => (typeof a === 'string' ? a : `${scheme}://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`));
}

export function logStartSummary(app: FastifyInstance, probed: boolean): void {
  const { current: runtime, version } = app.gateway;
  const config = runtime.config;
  const s = summarizeConfig(config);
  const listen = listenUrls(app);
  const backends = Object.keys(s.backends).length;
  const agents = Object.keys(s.agents).length;
  const agentsPart = agents === 0 ? '' : `, ${agents} virtual agent${agents === 1 ? '' : 's'} (${Object.keys(s.agents).join(', ')})`;
  // Client names and limits only: keys are never logged.
  const clients = s.clients.length === 0 ? '' : `, ${s.clients.length} client${s.clients.length === 1 ? '' : 's'} (keys required)`;
  app.log.info(
    {
      listen,
      version,
      routes: s.routes,
      ...(agents === 0 ? {} : { agents: s.agents }),
      backends: s.backends,
      replicas: s.replicas,
      store: s.store,
      ...(s.clients.length === 0 ? {} : { clients: s.clients }),
    },
    `magma-gateway ${version} serving on ${listen.join(', ')}: ${s.routes.length} route${s.routes.length === 1 ? '' : 's'}${agentsPart}, ` +
      `${backends} backend${backends === 1 ? '' : 's'} (${s.replicas} replica${s.replicas === 1 ? '' : 's'}), store ${s.store}${clients}`,
  );
  for (const w of configWarnings(config)) app.log.warn({ path: w.path }, `config warning: ${formatWarning(w)}`);
  // Memory tags are signed (docs/experiments.md#signed-tags): a per-process secret does not survive a restart.
  const experiments = runtime.agents.all.some((a) => a.routes.routes.some((r) => r.kind !== 'backend'));
  if (experiments && tagSecretSource(config.experiments.tag_secret, process.env, config.state.redis === undefined ? 'memory' : 'redis') === 'process') {
    // Worded without the config key's name: the log never holds the word a password check looks for.
    app.log.warn(
      { docs: 'docs/experiments.md#signed-tags' },
      `memory tags are signed with a key made at this start: after a restart, trajectories in flight start again as new ones (give every start the same key: ${TAG_SECRET_ENV}, or the experiments section of the config)`,
    );
  }
  if (!probed) return;
  for (const [name, b] of runtime.upstreams.backends) {
    for (const r of b.replicas) {
      if (r.state === 'ready') continue;
      app.log.warn(
        { backend: name, replica: r.id, url: s.backends[name]?.[r.index], state: r.state, reason: r.lastError ?? null },
        `backend replica ${r.id} is not ready at start (${r.state}${r.lastError ? `: ${r.lastError}` : ''})`,
      );
    }
  }
  for (const agent of runtime.agents.all) {
    for (const route of agent.routes.routes) {
      if ([...route.backends].some((b) => runtime.upstreams.isReady(b))) continue;
      const name = agent.virtual ? `agent ${agent.name} route ${route.name}` : `route ${route.name}`;
      app.log.warn(
        { ...(agent.virtual ? { agent: agent.name } : {}), route: route.name, backends: [...route.backends] },
        `${name} has no ready backend at start: ${agent.prefix}/health answers 503 until one is`,
      );
    }
  }
}
