/**
 * Things a valid config allows but an operator almost certainly did not mean. They do not stop the start
 * (the gateway serves correctly with them); they are logged at start and after a reload, and printed by
 * `magma-gateway validate` (README "Configuration").
 */
import { agentTables } from './agents.js';
import { formatPath } from './route-problems.js';
import type { GatewayConfig } from './schema.js';

export interface ConfigWarning {
  /** Where in the file, e.g. `routes[1].fallback[0]`, `agents.kitchen.routes[0].shadow[0]`. */
  path: string;
  message: string;
}

export function configWarnings(config: GatewayConfig): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  for (const table of agentTables(config)) {
    const where = formatPath(table.at);
    table.routes.forEach((r, i) => {
      // With several members a fallback naming a member is useful (a leg's own backend is skipped, so each
      // arm falls back to the other); only a route with one backend can fall back or shadow to nothing new.
      const members = r.backend !== undefined ? [r.backend] : Object.keys(r.split ?? r.ensemble ?? {});
      const only = members.length === 1 ? members[0] : undefined;
      r.fallback.forEach((b, j) => {
        if (b === only) {
          out.push({
            path: `${where}[${i}].fallback[${j}]`,
            message: `route "${r.name}" falls back to "${b}", its only backend: a failed sub-request has nowhere else to go`,
          });
        }
      });
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
  return out;
}

/** `path: message`, one per warning, for the log and `validate`. */
export function formatWarning(w: ConfigWarning): string {
  return `${w.path}: ${w.message}`;
}
