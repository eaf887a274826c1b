/**
 * `magma-gateway validate [--config FILE]`: load a config exactly as the gateway would at start, without listening,
 * so a change can be checked in CI or before a SIGHUP reload.
 */
import { ConfigError, loadConfigFile, type Env } from '../config/load.js';
import { formatSummary } from '../config/summary.js';
import { configWarnings, formatWarning } from '../config/warnings.js';
import { commandArgs, flagOrPositional, UsageError, type CommandIo } from './args.js';

export const VALIDATE_USAGE = `usage: magma-gateway validate [--config FILE]
  Checks a config file as the gateway would at start (without starting) and prints what it would run.
  --config FILE   the file (default: env MAGMA_GATEWAY_CONFIG); may also be given as the argument
  exit code: 0 valid (warnings are printed), 2 invalid or usage error
`;

export function validateCommand(argv: readonly string[], io: CommandIo, env: Env): number {
  const flags = { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } as const;
  const a = commandArgs(argv, flags, 1, { name: 'validate', usage: VALIDATE_USAGE, io }, (parsed) => {
    const path = flagOrPositional(parsed, 'config', 'config file') ?? (env.MAGMA_GATEWAY_CONFIG === '' ? undefined : env.MAGMA_GATEWAY_CONFIG);
    if (path === undefined) throw new UsageError('no config file given (--config FILE or MAGMA_GATEWAY_CONFIG)');
    return path;
  });
  if ('exit' in a) return a.exit;
  const path = a.args;
  let config;
  try {
    config = loadConfigFile(path, env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(`magma-gateway validate: ${err.message}\n`);
    return 2;
  }
  const warnings = configWarnings(config);
  io.out(`${path}: valid${warnings.length > 0 ? ` (${warnings.length} warning${warnings.length === 1 ? '' : 's'})` : ''}\n`);
  io.out(`${formatSummary(config)}\n`);
  for (const w of warnings) io.out(`warning: ${path}: ${formatWarning(w)}\n`);
  return 0;
}
