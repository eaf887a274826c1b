/**
 * Argument handling of every subcommand (docs/operations.md#command-line). parseArgs' errors are reworded: they are
 * long and suggest `--` tricks nobody needs.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { closest } from '../config/nearest-name.js';
import { GatewayError } from '../errors.js';

export class UsageError extends GatewayError {
  constructor(message: string, options?: ErrorOptions) {
    super('GATEWAY_ERR_USAGE', message, options);
    this.name = 'UsageError';
  }
}

export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: CommandIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
};

/**
 * A command's arguments, as `read` takes them from the command line: `--help` prints the usage (exit 0), a usage error
 * its message and the usage (exit 2); any other error is no fault of the arguments and goes on up.
 */
export function commandArgs<T>(
  argv: readonly string[],
  options: Options,
  maxPositionals: number,
  command: { name: string; usage: string; io: CommandIo },
  read: (parsed: Parsed) => T,
): { args: T } | { exit: 0 | 2 } {
  const { name, usage, io } = command;
  try {
    const parsed = parseCommandLine(argv, options, maxPositionals);
    if (parsed.values.help === true) {
      io.out(usage);
      return { exit: 0 };
    }
    return { args: read(parsed) };
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`magma-gateway ${name}: ${err.message}\n${usage}`);
    return { exit: 2 };
  }
}

/** A failure after the arguments were read: one line, exit code 1. */
export function commandFailed(io: CommandIo, command: string, message: string): 1 {
  io.err(`magma-gateway ${command}: ${message}\n`);
  return 1;
}

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function parseCommandLine(argv: readonly string[], options: Options, maxPositionals: number): Parsed {
  let parsed: Parsed;
  try {
    const r = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
    parsed = { values: r.values as Parsed['values'], positionals: r.positionals }; // parseArgs types values by the options given; ours are strings and booleans
  } catch (err) {
    const code: unknown = err instanceof Error && 'code' in err ? err.code : undefined; // node's parseArgs errors carry a code
    const message = err instanceof Error ? err.message : String(err);
    const opt = /'([^']*)'/.exec(message)?.[1]; // the option, as parseArgs quotes it
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const near = closest((opt ?? '').replace(/^-+/, ''), Object.keys(options));
      throw new UsageError(`unknown option ${opt ?? ''}${near === undefined ? '' : ` (did you mean --${near}?)`}`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      // "Option '-p, --port <value>' argument missing" or "Option '--json' does not take an argument".
      const words = (opt ?? '').split(' ');
      const flag = words.find((w) => w.startsWith('--')) ?? words[0];
      throw new UsageError(message.includes('missing') ? `${flag} needs a value` : `${flag} takes no value`);
    }
    throw new UsageError(message.split('.')[0] ?? message);
  }
  const extra = parsed.positionals[maxPositionals];
  if (extra !== undefined) {
    throw new UsageError(maxPositionals === 0 ? `unexpected argument "${extra}"` : `unexpected extra argument "${extra}"`);
  }
  return parsed;
}

/** The one convention for a URL or file argument: positional or `--<flag>`, not two different ones. */
export function flagOrPositional(parsed: Parsed, flag: string, what: string): string | undefined {
  const given = parsed.values[flag];
  const positional = parsed.positionals[0];
  if (typeof given === 'string' && positional !== undefined && given !== positional) {
    throw new UsageError(`two different ${what}s given ("${positional}" and --${flag} "${given}")`);
  }
  return typeof given === 'string' ? given : positional;
}

export function urlArgument(parsed: Parsed, what: string): string {
  const url = flagOrPositional(parsed, 'url', what);
  if (url === undefined) throw new UsageError(`missing the ${what} (give it as the argument or with --url)`);
  return url;
}

/** Trailing `/` stripped; a path prefix is kept: a server behind a reverse proxy may live under /some/prefix. */
export function baseUrl(url: string, what: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`not a URL: "${url}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`not an http(s) URL: "${url}"`);
  if (u.search !== '' || u.hash !== '') throw new UsageError(`the ${what} takes no query or fragment: "${url}"`);
  return u.href.replace(/\/+$/, '');
}

/** A flag's positive number; `unit` names what it counts in the error ("seconds", "MB", "files"). */
export function positiveOption(value: string | boolean | undefined, flag: string, dflt: number, unit = 'seconds'): number {
  if (value === undefined) return dflt;
  const s = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(s) || s <= 0) {
    throw new UsageError(`${flag} must be a positive number of ${unit}, got "${String(value)}"`);
  }
  return s;
}

/** One line, no control characters: agents' bodies and backends' error codes must not drive the terminal. */
export function cell(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\p{Cc}/gu, '?').trim();
}

/** Columns padded to their widest cell (the `right` ones right-aligned), two spaces apart, no trailing spaces. */
export function table(head: readonly string[], right: readonly boolean[], rows: readonly string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length))); // every row has one cell per column
  const line = (r: readonly string[]): string =>
    r.map((c, i) => (right[i] === true ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd(); // widths has one entry per column
  return [line(head), ...rows.map(line)];
}

/** Where `admin.listen` points in config/gateway.yaml and the examples (Envoy's admin port). */
export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:9901';

export function adminHeaders(token: string | boolean | undefined, headers: Record<string, string>): typeof headers {
  const t = typeof token === 'string' ? token : process.env.GATEWAY_ADMIN_TOKEN;
  return t === undefined || t === '' ? headers : { ...headers, authorization: `Bearer ${t}` };
}

export function authHint(status: number): string {
  return status === 401 || status === 403 ? ' (pass --token or set GATEWAY_ADMIN_TOKEN)' : '';
}

export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
}
