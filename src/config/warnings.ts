/** What a valid config allows but an operator almost certainly did not mean; logged, never fatal. */
import { agentTables } from './agents.js';
import { formatPath } from './route-problems.js';
import { CLIENT_WAIT_S, type GatewayConfig } from './schema.js';

interface ConfigWarning {
  path: string;
  message: string;
}

export function configWarnings(config: GatewayConfig): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  for (const table of agentTables(config)) {
    const where = formatPath(table.at);
    table.routes.forEach((r, i) => {
      // With several members a fallback naming a member sends a leg to another member (its own backend is
      // skipped): fine for an ensemble, a crossover for a split's experiment; with one backend it goes nowhere new.
      const members = r.backend !== undefined ? [r.backend] : Object.keys(r.split ?? r.ensemble ?? {});
      const only = members.length === 1 ? members[0] : undefined;
      r.fallback.forEach((b, j) => {
        if (r.split !== undefined && only === undefined && members.includes(b)) {
          out.push({
            path: `${where}[${i}].fallback[${j}]`,
            message: `split "${r.name}" falls back to "${b}", another of its own arms: a failed arm's trajectories continue on the other arm and stay credited to the arm they were assigned (a crossover), which dilutes the comparison; fall back to a backend outside the split (docs/experiments.md#crossover)`,
          });
        }
        if (b === only) {
          out.push({
            path: `${where}[${i}].fallback[${j}]`,
            message: `route "${r.name}" falls back to "${b}", its only backend: a failed sub-request has nowhere else to go`,
          });
        }
      });
      if (r.cache !== 'off' && config.cache === undefined) {
        out.push({
          path: `${where}[${i}].cache`,
          message: `route "${r.name}" sets cache: ${r.cache}, but the config has no top-level "cache": nothing is cached (docs/cache.md)`,
        });
      }
      r.shadow.forEach((b, j) => {
        if (b === only) {
          out.push({
            path: `${where}[${i}].shadow[${j}]`,
            message: `route "${r.name}" shadows "${b}", its only backend: every input is sent to it twice and compared with itself`,
          });
        }
      });
    });
  }
  out.push(...clientKeyWarnings(config));
  out.push(...deadlineWarnings(config));
  out.push(...adminWarnings(config));
  return out;
}

/** Allowed on loopback, but any local process, another user's included, may use it. */
function adminWarnings(config: GatewayConfig): ConfigWarning[] {
  const { listen, token } = config.admin;
  if (listen === undefined || (token !== undefined && token !== '')) return [];
  return [{
    path: 'admin.token',
    message: `the admin listener ${listen} has no token: any process on this host can read the config and experiments, reset them, reload and reach the backends; set admin.token (docs/operations.md#admin-security)`,
  }];
}

function deadlineWarnings(config: GatewayConfig): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  const over = (path: string, seconds: number | undefined, what: string): void => {
    if (seconds !== undefined && seconds > CLIENT_WAIT_S) {
      out.push({
        path,
        message: `${what} is ${seconds} s, above the ${CLIENT_WAIT_S} s a BENCH client waits for an answer: the client times out (and BENCH aborts its run) before the gateway answers with error candidates`,
      });
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
  return out;
}

/** Shorter keys are warned about: a key is all that stands between a port and anyone who can reach it. */
const MIN_CLIENT_KEY_CHARS = 16;

/** RFC 3986 pchar without "%": any other character of a key must be percent-encoded in an address. */
const PATH_SAFE = /^[A-Za-z0-9._~!$&'()*+,;=:@-]*$/;

/** The messages never quote a key. */
function clientKeyWarnings(config: GatewayConfig): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  for (const [name, c] of Object.entries(config.clients ?? {})) {
    const path = `clients.${name}.key`;
    if (c.key.length < MIN_CLIENT_KEY_CHARS) {
      out.push({ path, message: `the key of client "${name}" is shorter than ${MIN_CLIENT_KEY_CHARS} characters: use a long random key (openssl rand -hex 32)` });
    }
    if (!PATH_SAFE.test(c.key)) {
      out.push({
        path,
        message:
          `the key of client "${name}" has characters that must be percent-encoded in an address (/k/<key>): ` +
          'encode them there, send the key in Authorization: Bearer or x-api-key, or use a key of letters and digits',
      });
    }
  }
  return out;
}

export function formatWarning(w: ConfigWarning): string {
  return `${w.path}: ${w.message}`;
}
