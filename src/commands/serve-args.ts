/**
 * The command line of `magma-gateway [serve]`: which config file, and the few values an operator overrides
 * without editing it (listen address, log level). Every mistake is a UsageError, checked before anything
 * starts, so `--port abc` is one line and exit 2 rather than a crash at listen.
 */
import { configSchema } from '../config/schema.js';
import type { Env } from '../config/load.js';
import { parseCommandLine, UsageError } from './args.js';

const LOG_LEVELS: readonly string[] = configSchema.shape.log_level.unwrap().options;

interface ServeOptions {
  help: boolean;
  /** --config, else MAGMA_GATEWAY_CONFIG; undefined when neither is given. */
  configPath: string | undefined;
  host: string | undefined;
  port: number | undefined;
  /** --log-level, else MAGMA_GATEWAY_LOG_LEVEL; overrides the config's log_level. */
  logLevel: string | undefined;
}

const SERVE_FLAGS = {
  config: { type: 'string', short: 'c' },
  host: { type: 'string' },
  port: { type: 'string', short: 'p' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function portOf(text: string): number {
  // Digits only: Number() would take "0x50", " 80" or "8e3" and listen on a port nobody asked for.
  const digits = text.length > 0 && text.length <= 5 && [...text].every((c) => c >= '0' && c <= '9');
  const n = digits ? Number(text) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new UsageError(`--port must be a port number from 0 to 65535, got "${text}"`);
  return n;
}

function levelOf(text: string, source: string): string {
  if (!LOG_LEVELS.includes(text)) throw new UsageError(`${source} must be one of ${LOG_LEVELS.join(', ')}, got "${text}"`);
  return text;
}

export function parseServeArgs(argv: readonly string[], env: Env): ServeOptions {
  const { values } = parseCommandLine(argv, SERVE_FLAGS, 0);
  const str = (k: string): string | undefined => (typeof values[k] === 'string' ? values[k] : undefined);
  const host = str('host');
  if (host !== undefined && host.trim() === '') throw new UsageError('--host needs a host name or address');
  const port = str('port');
  const flagLevel = str('log-level');
  const envLevel = env.MAGMA_GATEWAY_LOG_LEVEL === '' ? undefined : env.MAGMA_GATEWAY_LOG_LEVEL;
  let logLevel: string | undefined;
  if (flagLevel !== undefined) logLevel = levelOf(flagLevel, '--log-level');
  else if (envLevel !== undefined) logLevel = levelOf(envLevel, 'MAGMA_GATEWAY_LOG_LEVEL');
  const envConfig = env.MAGMA_GATEWAY_CONFIG === '' ? undefined : env.MAGMA_GATEWAY_CONFIG;
  return {
    help: values.help === true,
    configPath: str('config') ?? envConfig,
    host,
    port: port === undefined ? undefined : portOf(port),
    logLevel,
  };
}
