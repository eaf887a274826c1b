/**
 * Hot reload (docs/operations.md#hot-reload). Restart-only settings changed in the file are listed, not refused:
 * refusing would hold back a routing fix for a port edit that only a restart can apply anyway.
 */
import { isDeepStrictEqual } from 'node:util';
import { deepFreeze, loadConfigFile } from './config/load.js';
import { isLoopback, parseHostPort, type GatewayConfig } from './config/schema.js';
import { GatewayRuntime } from './runtime.js';
import { prepareServerTlsReload } from './config/tls-files.js';
import { GatewayError } from './errors.js';
import type { GatewayState } from './batch/gateway-state.js';
import type { Logger } from './logging.js';

interface ReloadHost {
  gateway: GatewayState;
  log: Logger;
  server?: unknown;
}

type ReloadTrigger = 'api' | 'signal';

interface ReloadReport {
  reloaded: true;
  trigger: ReloadTrigger;
  config_path: string;
  backends: { added: string[]; removed: string[]; changed: string[] };
  /** Names only: `changed` is a new key or new limits, never shown. */
  clients: { added: string[]; removed: string[]; changed: string[] };
  routes: string[];
  agents: { added: string[]; removed: string[]; changed: string[]; not_ready_routes: Record<string, string[]> };
  restart_required: string[];
  warnings: string[];
  not_ready_routes: string[];
}

type ReloadOutcome = { ok: true; report: ReloadReport } | { ok: false; status: 400 | 409 | 503; detail: string };

interface Bookkeeping {
  chain: Promise<unknown>;
  retiring: Set<Promise<void>>;
  closing: boolean;
}

// Keyed by the gateway state: it is the one object every encapsulated context shares.
const books = new WeakMap<GatewayState, Bookkeeping>();

function bookkeeping(state: GatewayState): Bookkeeping {
  let b = books.get(state);
  if (b === undefined) books.set(state, (b = { chain: Promise.resolve(), retiring: new Set(), closing: false }));
  return b;
}

function keepRestartOnly(running: GatewayConfig, next: GatewayConfig): { config: GatewayConfig; kept: string[] } {
  const kept: string[] = [];
  for (const key of ['host', 'port', 'body_limit_mb', 'tls_handshake_timeout_s'] as const) {
    if (running.server[key] !== next.server[key]) {
      kept.push(`server.${key}: ${String(next.server[key])} in the file, ${String(running.server[key])} until a restart`);
    }
  }
  if (!isDeepStrictEqual(running.state, next.state)) kept.push('state: changed in the file, kept until a restart');
  // The admin socket is bound and the histograms' buckets are fixed at start.
  if (running.admin.listen !== next.admin.listen) {
    kept.push(`admin.listen: ${next.admin.listen ?? 'none'} in the file, ${running.admin.listen ?? 'none'} until a restart`);
  }
  if (!isDeepStrictEqual(running.metrics, next.metrics)) kept.push('metrics: changed in the file, kept until a restart');
  // The response cache is built once with its store (docs/cache.md); routes' `cache` modes do reload.
  if (!isDeepStrictEqual(running.cache, next.cache)) kept.push('cache: changed in the file, kept until a restart');
  const admin = { ...next.admin, listen: running.admin.listen };
  const at = admin.listen === undefined ? undefined : parseHostPort(admin.listen);
  if (at !== undefined && !isLoopback(at.host) && (admin.token === undefined || admin.token === '')) {
    // The file alone was valid, but the socket bound at start (from it or --admin-listen) stays open beyond this host.
    throw new GatewayError('GATEWAY_ERR_RELOAD_REFUSED', `admin.token: the admin listener on ${admin.listen} stays until a restart and needs a non-empty admin.token`);
  }
  if (kept.length === 0) return { config: next, kept };
  const { host, port, body_limit_mb } = running.server;
  const server = { ...next.server, host, port, body_limit_mb };
  const cache = running.cache === undefined ? {} : { cache: running.cache };
  const { cache: _fromFile, ...rest } = next;
  return { config: deepFreeze({ ...rest, ...cache, server, admin, state: running.state, metrics: running.metrics }), kept };
}

function diffNamed(a: Record<string, unknown> | undefined, b: Record<string, unknown> | undefined): ReloadReport['backends'] {
  const before = Object.keys(a ?? {});
  const after = Object.keys(b ?? {});
  return {
    added: after.filter((n) => !before.includes(n)),
    removed: before.filter((n) => !after.includes(n)),
    changed: after.filter((n) => before.includes(n) && !isDeepStrictEqual(a?.[n], b?.[n])),
  };
}

/** In the background once its batches are done; then its replicas' series go. */
function retire(app: ReloadHost, books: Bookkeeping, old: GatewayRuntime): void {
  const done = old
    .close()
    .then(() => {
      const live = new Set(app.gateway.current.upstreams.all().map((r) => r.id));
      for (const r of old.upstreams.all()) {
        if (!live.has(r.id)) app.gateway.metrics.backendUp.remove({ backend: r.backend, replica: r.id });
      }
      app.log.info('previous config drained: its batches finished and its pools are closed');
    })
    .catch((err: unknown) => app.log.error({ err }, 'error while closing the previous config'))
    .finally(() => books.retiring.delete(done));
  books.retiring.add(done);
}

async function reloadOnce(app: ReloadHost, trigger: ReloadTrigger): Promise<ReloadOutcome> {
  const state = app.gateway;
  const books = bookkeeping(state);
  const refuse = (status: 400 | 409 | 503, detail: string): ReloadOutcome => {
    state.metrics.reloads.inc({ result: 'refused' });
    state.activity.recordReload({ trigger, ok: false, detail });
    app.log.error({ trigger, detail }, 'config reload refused; the running config keeps serving');
    return { ok: false, status, detail };
  };
  if (books.closing) return refuse(503, 'the gateway is shutting down');
  const path = state.configPath;
  if (path === undefined) return refuse(409, 'the gateway was started without a config file: nothing to reload');

  const running = state.current;
  let next: GatewayRuntime;
  let kept: string[];
  let applyTls: (server: unknown) => void;
  try {
    const loaded = keepRestartOnly(running.config, state.loadConfig?.() ?? loadConfigFile(path));
    const tls = prepareServerTlsReload(running.config.server.tls, loaded.config.server.tls);
    kept = [...loaded.kept, ...tls.kept];
    applyTls = tls.apply;
    next = new GatewayRuntime(loaded.config, state.metrics, app.log, state.store, state.version);
  } catch (err) {
    return refuse(400, err instanceof Error ? err.message : String(err));
  }
  next.upstreams.inherit(running.upstreams);
  await next.start();
  if (books.closing) {
    await next.close();
    return refuse(503, 'the gateway is shutting down');
  }
  state.current = next;
  state.clients.configure(next.config.clients);
  applyTls(app.server);
  if (next.config.log_level !== running.config.log_level) app.log.level = next.config.log_level;
  retire(app, books, running);

  const warnings: string[] = [];
  const notReady: Record<string, string[]> = {};
  for (const agent of next.agents.all) {
    const lacking = next.routesLackingBackend(agent);
    if (agent.virtual && lacking.length > 0) notReady[agent.name] = lacking;
    const before = running.agent(agent.virtual ? agent.name : undefined);
    if (before === undefined || before.routes.memoryKey === agent.routes.memoryKey) continue;
    const where = agent.virtual ? `agents.${agent.name}: ` : '';
    warnings.push(`${where}memory_key changed: trajectories tagged under the old key start over (no stickiness for them)`);
  }
  const report: ReloadReport = {
    reloaded: true,
    trigger,
    config_path: path,
    backends: diffNamed(running.config.backends, next.config.backends),
    clients: diffNamed(running.config.clients, next.config.clients),
    routes: next.config.routes.map((r) => r.name),
    agents: { ...diffNamed(running.config.agents, next.config.agents), not_ready_routes: notReady },
    restart_required: kept,
    warnings,
    not_ready_routes: next.agents.root === undefined ? [] : next.routesLackingBackend(next.agents.root),
  };
  state.metrics.reloads.inc({ result: 'ok' });
  state.activity.recordReload({ trigger, ok: true, detail: null });
  app.log.info({ ...report }, 'config reloaded');
  return { ok: true, report };
}

/** Never throws. Concurrent calls run one after the other. */
export function reloadGateway(app: ReloadHost, trigger: ReloadTrigger): Promise<ReloadOutcome> {
  const books = bookkeeping(app.gateway);
  const run = books.chain.then(() => reloadOnce(app, trigger));
  books.chain = run.catch(() => undefined);
  return run.catch((err: unknown) => {
    app.log.error({ err }, 'config reload failed');
    return { ok: false, status: 400, detail: err instanceof Error ? err.message : String(err) };
  });
}

/** For shutdown: refuse new reloads, wait for the one in progress and for old runtimes to drain. */
export async function settleReloads(state: GatewayState): Promise<void> {
  const books = bookkeeping(state);
  books.closing = true;
  await books.chain;
  await Promise.all([...books.retiring]);
}
