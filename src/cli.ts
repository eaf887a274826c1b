#!/usr/bin/env node
/**
 * The `magma-gateway` command. The entry point only loads config, listens and handles signals (house style);
 * everything else is built by buildApp.
 *
 *   magma-gateway [--config FILE] [--host H] [--port P]   serve (config also from MAGMA_GATEWAY_CONFIG)
 *   magma-gateway check <agent-url>                       contract conformance probe of an agent
 *   magma-gateway report [--url <admin-url>]              the A/B experiment report as a table
 */
import { parseArgs } from 'node:util';
import { listenAdmin } from './admin-app.js';
import { buildApp } from './app.js';
import { checkCommand } from './commands/check.js';
import { reportCommand } from './commands/report.js';
import { ConfigError, loadConfigFile } from './config/load.js';
import { reloadGateway } from './reload.js';
import { shutdownGateway } from './shutdown.js';

const USAGE = `usage:
  magma-gateway [--config FILE] [--host HOST] [--port PORT]   run the gateway (config: --config or MAGMA_GATEWAY_CONFIG)
  magma-gateway check <agent-url> [--timeout S] [--json]     test an agent against the MAGMA v2.0 contract
  magma-gateway report [--url ADMIN-URL] [--token T] [--json] print the experiment report (admin listener)
`;

async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      host: { type: 'string' },
      port: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const path = values.config ?? process.env.MAGMA_GATEWAY_CONFIG;
  if (path === undefined) {
    process.stderr.write(`magma-gateway: no config file given\n${USAGE}`);
    return 2;
  }
  let config;
  try {
    config = loadConfigFile(path);
  } catch (err) {
    process.stderr.write(`magma-gateway: ${err instanceof ConfigError ? err.message : String(err)}\n`);
    return 2;
  }
  const app = await buildApp({ config, configPath: path });
  const host = values.host ?? config.server.host;
  const port = values.port !== undefined ? Number(values.port) : config.server.port;
  await app.listen({ host, port });
  // The admin API on its own socket (admin.listen), when configured.
  const adminUrl = await listenAdmin(app);
  if (adminUrl !== undefined) app.log.info({ url: adminUrl }, 'admin listener: /gateway/* and the backend passthrough');

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    // Drain (src/shutdown.ts): stop accepting, finish batches in flight, close each connection after its last
    // answer, close backend pools, then exit; server.drain_timeout_s bounds it all.
    app.log.info({ signal }, 'stopping: finishing batches in flight');
    // The running config's: a reload may have changed it.
    const drainTimeoutS = app.gateway.current.config.server.drain_timeout_s;
    shutdownGateway(app, drainTimeoutS).then(
      (outcome) => {
        if (outcome === 'timed_out') {
          app.log.warn({ drain_timeout_s: drainTimeoutS }, 'server.drain_timeout_s ran out: remaining connections closed');
        }
        process.exit(outcome === 'drained' ? 0 : 1);
      },
      (err: unknown) => {
        app.log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Re-read the config file; reloadGateway logs the outcome and never throws (a bad file keeps the old config).
  process.on('SIGHUP', () => void reloadGateway(app, 'signal'));
  return -1; // keep running
}

async function main(): Promise<void> {
  const [sub, ...rest] = process.argv.slice(2);
  // exitCode rather than exit(): a piped table must be flushed before the process ends.
  if (sub === 'check') {
    process.exitCode = await checkCommand(rest);
    return;
  }
  if (sub === 'report') {
    process.exitCode = await reportCommand(rest);
    return;
  }
  const code = await serve(process.argv.slice(2));
  if (code >= 0) process.exitCode = code;
}

main().catch((err: unknown) => {
  process.stderr.write(`magma-gateway: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
