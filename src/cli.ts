#!/usr/bin/env node
/** The `magma-gateway` command (docs/operations.md#command-line): one line for any failure, never a stack trace. */
import type { FastifyInstance } from 'fastify';
import { listenAdmin } from './admin-app.js';
import { buildApp, PACKAGE_VERSION } from './app.js';
import { parseCommandLine, processIo, UsageError } from './commands/args.js';
import { CHECK_USAGE, checkCommand } from './commands/check.js';
import { OUTCOMES_USAGE, outcomesCommand } from './commands/outcomes.js';
import { REPORT_USAGE, reportCommand } from './commands/report.js';
import { VALIDATE_USAGE, validateCommand } from './commands/validate.js';
import { ConfigError, deepFreeze, loadConfigFile, type Env } from './config/load.js';
import { configSchema, isLoopback, parseHostPort, type GatewayConfig } from './config/schema.js';
import { closest } from './config/nearest-name.js';
import { loggerOptions } from './logging.js';
import { applyProcessSettings } from './process-settings.js';
import { reloadGateway } from './reload.js';
import { shutdownGateway } from './shutdown.js';

const LOG_LEVELS: readonly string[] = configSchema.shape.log_level.unwrap().options;

interface ServeOptions {
  help: boolean;
  configPath: string | undefined;
  host: string | undefined;
  port: number | undefined;
  adminListen: string | undefined;
  logLevel: string | undefined;
}

const SERVE_FLAGS = {
  config: { type: 'string', short: 'c' },
  host: { type: 'string' },
  port: { type: 'string', short: 'p' },
  'admin-listen': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function portOf(text: string, source: string): number {
  // Digits only: Number() would take "0x50", " 80" or "8e3" and listen on a port nobody asked for.
  const n = /^[0-9]{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new UsageError(`${source} must be a port number from 0 to 65535, got "${text}"`);
  return n;
}

function hostPortOf(text: string, source: string): string {
  if (parseHostPort(text) === undefined) throw new UsageError(`${source} must be host:port (e.g. 127.0.0.1:9901, [::1]:9901), got "${text}"`);
  return text;
}

/** Unset and empty alike are undefined, as the shell's `${VAR:-}`. */
function envOf(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === '' ? undefined : v;
}

function levelOf(text: string, source: string): string {
  if (!LOG_LEVELS.includes(text)) throw new UsageError(`${source} must be one of ${LOG_LEVELS.join(', ')}, got "${text}"`);
  return text;
}

/**
 * The command line of `magma-gateway [serve]`: the config file and the few values an operator overrides without
 * editing it, each also from an environment variable (the flag wins). Every mistake is a UsageError checked
 * before anything starts, so `--port abc` is one line and exit 2 rather than a crash at listen.
 */
function parseServeArgs(argv: readonly string[], env: Env): ServeOptions {
  const { values } = parseCommandLine(argv, SERVE_FLAGS, 0);
  const str = (k: string): string | undefined => (typeof values[k] === 'string' ? values[k] : undefined);
  const host = str('host');
  if (host !== undefined && host.trim() === '') throw new UsageError('--host needs a host name or address');
  const pick = <T>(flag: string, name: string, read: (text: string, source: string) => T): T | undefined => {
    const given = str(flag);
    if (given !== undefined) return read(given, `--${flag}`);
    const fromEnv = envOf(env, name);
    return fromEnv === undefined ? undefined : read(fromEnv, name);
  };
  return {
    help: values.help === true,
    configPath: str('config') ?? envOf(env, 'MAGMA_GATEWAY_CONFIG'),
    host,
    port: pick('port', 'MAGMA_GATEWAY_PORT', portOf),
    adminListen: pick('admin-listen', 'MAGMA_GATEWAY_ADMIN_LISTEN', hostPortOf),
    logLevel: pick('log-level', 'MAGMA_GATEWAY_LOG_LEVEL', levelOf),
  };
}

const USAGE = `usage:
  magma-gateway [serve] [--config FILE] [--host HOST] [--port PORT] [--admin-listen HOST:PORT] [--log-level LEVEL]
      run the gateway; each also from the environment: MAGMA_GATEWAY_CONFIG, MAGMA_GATEWAY_PORT,
      MAGMA_GATEWAY_ADMIN_LISTEN, MAGMA_GATEWAY_LOG_LEVEL (the flag wins)
  magma-gateway validate [--config FILE]                 check a config file without starting
  magma-gateway check <agent-url> [--timeout S] [--json] test an agent against the MAGMA v2.0 contract
  magma-gateway report [<admin-url>] [--token T] [--json] print the experiment report (admin listener,
      default http://127.0.0.1:9901)
  magma-gateway outcomes import <BENCH results dir> [--url U] post BENCH's episode outcomes to the report
  magma-gateway --version                                print the version
  magma-gateway help [COMMAND]                           this text, or a command's
  (check and report take their URL as the argument or as --url URL)
`;

const SUBCOMMAND_USAGE: Record<string, string> = {
  serve: USAGE,
  validate: VALIDATE_USAGE,
  check: CHECK_USAGE,
  report: REPORT_USAGE,
  outcomes: OUTCOMES_USAGE,
};
const COMMANDS = ['serve', 'validate', 'check', 'report', 'outcomes', 'help', 'version'];

function usageError(message: string, usage = USAGE): number {
  process.stderr.write(`magma-gateway: ${message}\n${usage}`);
  return 2;
}

function runtimeError(message: string): number {
  process.stderr.write(`magma-gateway: ${message}\n`);
  return 1;
}

/** A listen failure the operator can fix (port taken, not allowed, no such address). */
function listenProblem(err: unknown, host: string, port: number): string | undefined {
  const code: unknown = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined; // node's errno code
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE') return `cannot listen on ${where}: the address is already in use (change the port in the config or with --port / --admin-listen)`;
  if (code === 'EACCES') return `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`;
  if (code === 'EADDRNOTAVAIL') return `cannot listen on ${where}: no such local address (change server.host or --host)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot listen on ${where}: unknown host name (change server.host or --host)`;
  return undefined;
}

/** False (after closing the app and saying why) when the address `listen` was to use cannot be used. */
async function listenOrExplain(app: FastifyInstance, listen: () => Promise<unknown>, at: { host: string; port: number } | undefined, what = ''): Promise<boolean> {
  try {
    await listen();
    return true;
  } catch (err) {
    const problem = at === undefined ? undefined : listenProblem(err, at.host, at.port);
    if (problem === undefined) throw err;
    await app.close();
    runtimeError(`${what}${problem}`);
    return false;
  }
}

/** As if the file said so, checked as the schema checks the file; a reload keeps it (admin.listen is restart-only). */
function withAdminListen(config: GatewayConfig, listen: string | undefined): GatewayConfig {
  if (listen === undefined) return config;
  const at = parseHostPort(listen);
  if (at !== undefined && !isLoopback(at.host) && (config.admin.token === undefined || config.admin.token === '')) {
    throw new UsageError(`--admin-listen ${listen}: an admin listener beyond loopback needs admin.token in the config`);
  }
  return deepFreeze({ ...config, admin: { ...config.admin, listen } });
}

async function serve(argv: string[]): Promise<number> {
  const opts = parseServeArgs(argv, process.env);
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const path = opts.configPath;
  if (path === undefined) return usageError('no config file given (--config FILE or MAGMA_GATEWAY_CONFIG)');
  let config;
  try {
    config = loadConfigFile(path);
  } catch (err) {
    process.stderr.write(`magma-gateway: ${err instanceof ConfigError ? err.message : String(err)}\n`);
    return 2;
  }
  config = withAdminListen(config, opts.adminListen);
  // Process-wide and before the first batch, so every way of starting the gateway runs the same process.
  const heap = applyProcessSettings();
  const app = await buildApp({ config, configPath: path, loadConfig: () => withAdminListen(loadConfigFile(path), opts.adminListen), logger: loggerOptions(opts.logLevel ?? config.log_level) });
  if (heap.source === 'gateway') app.log.info({ heap_growing_percent: heap.percent }, `V8 heap growth ${heap.percent}% (set by the gateway)`);
  else app.log.info({ node_arg: heap.arg }, `V8 heap growth from node's command line (${heap.arg}), the gateway's own not applied`);
  const host = opts.host ?? config.server.host;
  const port = opts.port ?? config.server.port;
  if (!(await listenOrExplain(app, () => app.listen({ host, port }), { host, port }))) return 1;
  let adminUrl: string | undefined;
  const adminAt = parseHostPort(app.gateway.current.config.admin.listen ?? '');
  if (!(await listenOrExplain(app, async () => (adminUrl = await listenAdmin(app)), adminAt, 'admin.listen: '))) return 1;
  if (adminUrl !== undefined) app.log.info({ url: adminUrl }, 'admin listener: /gateway/* and the backend passthrough');

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
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
  process.on('SIGHUP', () => void reloadGateway(app, 'signal'));
  return -1; // keep running
}

async function run(args: string[]): Promise<number> {
  const [first, ...rest] = args;
  if (first === '--version' || first === '-V' || first === 'version') {
    if (first === 'version' && rest.length > 0) return usageError(`"version" takes no arguments`);
    process.stdout.write(`magma-gateway ${PACKAGE_VERSION}\n`);
    return 0;
  }
  if (first === 'help' || first === '--help' || first === '-h') {
    const topic = rest[0];
    if (topic === undefined) process.stdout.write(USAGE);
    else if (SUBCOMMAND_USAGE[topic] !== undefined) process.stdout.write(SUBCOMMAND_USAGE[topic]);
    else return usageError(`no help for unknown command "${topic}"`);
    return 0;
  }
  // exitCode rather than exit(): a piped table must be flushed before the process ends.
  if (first === 'check') return checkCommand(rest);
  if (first === 'report') return reportCommand(rest);
  if (first === 'outcomes') return outcomesCommand(rest);
  if (first === 'validate') return validateCommand(rest, processIo, process.env);
  if (first === 'serve') return serve(rest);
  if (first === undefined || first.startsWith('-')) return serve(args);
  if (first.endsWith('.yaml') || first.endsWith('.yml')) {
    return usageError(`unknown command "${first}" (to run with this config file: --config ${first})`);
  }
  const near = closest(first, COMMANDS);
  return usageError(`unknown command "${first}"${near === undefined ? '' : ` (did you mean "${near}"?)`}`);
}

// A reader that stops early (`| head`) ends the output, not the command with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  process.exit(runtimeError(`standard output: ${err.message}`));
});

run(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.exitCode = usageError(err.message);
      return;
    }
    // Anything else is the gateway's own fault: one line for the operator, the stack only when asked for.
    const detail = err instanceof Error ? (process.env.MAGMA_GATEWAY_DEBUG ? (err.stack ?? err.message) : err.message) : String(err);
    process.exit(runtimeError(detail));
  },
);
