/**
 * The `regex` match operator's compile step (docs/routing.md#routes), shared by the config loader (which reports a
 * bad pattern at its path) and the router (which compiles it once per route). Text-only, so any layer may use it.
 */
import { GatewayError } from '../errors.js';

/** A JavaScript regular expression, unanchored (use `^...$` to anchor), without flags. */
export function compileRegex(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (err) {
    throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid regex: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}
