/**
 * The command line of `magma-gateway [serve]`: the config file and the few values an operator overrides without
 * editing it, each also from an environment variable (the flag wins). Every mistake is a UsageError checked
 * before anything starts, so `--port abc` is one line and exit 2 rather than a crash at listen.
 */
import { configSchema, parseHostPort } from '../config/schema.js';
import type { Env } from '../config/load.js';
import { parseCommandLine, UsageError } from './args.js';

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
  const digits = text.length > 0 && text.length <= 5 && [...text].every((c) => c >= '0' && c <= '9');
  const n = digits ? Number(text) : NaN;
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

export function parseServeArgs(argv: readonly string[], env: Env): ServeOptions {
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
