/** The `regex` match operator's compile step (docs/routing.md#routes), for the config loader and the router. */
import { GatewayError } from '../errors.js';

/** Unanchored, without flags. */
export function compileRegex(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (err) {
    throw new GatewayError('GATEWAY_ERR_ROUTES_INVALID', `invalid regex: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}
