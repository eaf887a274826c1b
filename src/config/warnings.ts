/** What a valid config allows but an operator almost certainly did not mean; logged, never fatal. */
import { agentTables } from './agents.js';
import { formatPath } from './route-problems.js';
import { CLIENT_WAIT_S, type GatewayConfig } from './schema.js';

interface ConfigWarning {
  path: string;
  message: string;
}

type Warn = (path: string, message: string) => void;

export function configWarnings(config: GatewayConfig): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  const warn: Warn = (path, message) => void out.push({ path, message });
  for (const table of agentTables(config)) {
    const where = formatPath(table.at);
    table.routes.forEach((r, i) => {
      // With several members a fallback naming a member sends a leg to another member (its own backend is
      // skipped): fine for an ensemble, a crossover for a split's experiment; with one backend it goes nowhere new.
      const members = r.backend !== undefined ? [r.backend] : Object.keys(r.split ?? r.ensemble ?? {});
      const only = members.length === 1 ? members[0] : undefined;
      r.fallback.forEach((b, j) => {
        if (r.split !== undefined && only === undefined && members.includes(b)) {
          warn(
            `${where}[${i}].fallback[${j}]`,
            `split "${r.name}" falls back to "${b}", another of its own arms: a failed arm's trajectories continue on the other arm and stay credited to the arm they were assigned (a crossover), which dilutes the comparison; fall back to a backend outside the split (docs/experiments.md#crossover)`,
          );
        }
        if (b === only) warn(`${where}[${i}].fallback[${j}]`, `route "${r.name}" falls back to "${b}", its only backend: a failed sub-request has nowhere else to go`);
      });
      if (r.cache !== 'off' && config.cache === undefined) {
        warn(`${where}[${i}].cache`, `route "${r.name}" sets cache: ${r.cache}, but the config has no top-level "cache": nothing is cached (docs/cache.md)`);
      }
      r.shadow.forEach((b, j) => {
        if (b === only) warn(`${where}[${i}].shadow[${j}]`, `route "${r.name}" shadows "${b}", its only backend: every input is sent to it twice and compared with itself`);
      });
    });
  }
  clientKeyWarnings(config, warn);
  deadlineWarnings(config, warn);
  adminWarnings(config, warn);
  return out;
}

/** Allowed on loopback, but any local process, another user's included, may use it. */
function adminWarnings(config: GatewayConfig, warn: Warn): void {
  const { listen, token } = config.admin;
  if (listen === undefined || (token !== undefined && token !== '')) return;
  warn(
    'admin.token',
    `the admin listener ${listen} has no token: any process on this host can read the config and experiments, reset them, reload and reach the backends; set admin.token (docs/operations.md#admin-security)`,
  );
}

function deadlineWarnings(config: GatewayConfig, warn: Warn): void {
  const over = (path: string, seconds: number | undefined, what: string): void => {
    if (seconds !== undefined && seconds > CLIENT_WAIT_S) {
      warn(path, `${what} is ${seconds} s, above the ${CLIENT_WAIT_S} s a BENCH client waits for an answer: the client times out (and BENCH aborts its run) before the gateway answers with error candidates`);
    }
  };
  over('request_timeout_s', config.request_timeout_s, 'the batch deadline');
  for (const [name, b] of Object.entries(config.backends)) {
    over(`backends.${name}.timeout_s`, b.timeout_s, `backend "${name}"'s timeout`);
    over(`backends.${name}.queue_timeout_s`, b.queue_timeout_s, `backend "${name}"'s permit wait`);
  }
  for (const [name, c] of Object.entries(config.clients ?? {})) {
    over(`clients.${name}.max_wait_s`, c.max_wait_s, `client "${name}"'s limit wait`);
  }
}

/** Shorter keys are warned about: a key is all that stands between a port and anyone who can reach it. */
const MIN_CLIENT_KEY_CHARS = 16;

/** RFC 3986 pchar without "%": any other character of a key must be percent-encoded in an address. */
const PATH_SAFE = /^[A-Za-z0-9._~!$&'()*+,;=:@-]*$/;

/** The messages never quote a key. */
function clientKeyWarnings(config: GatewayConfig, warn: Warn): void {
  for (const [name, c] of Object.entries(config.clients ?? {})) {
    const path = `clients.${name}.key`;
    if (c.key.length < MIN_CLIENT_KEY_CHARS) {
      warn(path, `the key of client "${name}" is shorter than ${MIN_CLIENT_KEY_CHARS} characters: use a long random key (openssl rand -hex 32)`);
    }
    if (!PATH_SAFE.test(c.key)) {
      warn(
        path,
        `the key of client "${name}" has characters that must be percent-encoded in an address (/k/<key>): ` +
          'encode them there, send the key in Authorization: Bearer or x-api-key, or use a key of letters and digits',
      );
    }
  }
}

export function formatWarning(w: ConfigWarning): string {
  return `${w.path}: ${w.message}`;
}
