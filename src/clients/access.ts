/**
 * Who may ask the agent listener what (docs/operations.md#client-keys), for the batch front and fastify; keys never
 * appear in a message. A key given on an `optional` path (the health checks) must be valid, so a mistyped key fails
 * a run's first call.
 */
import type { GatewayErrCode } from '../errors.js';
import { ANONYMOUS_CLIENT } from '../metrics.js';
import type { ClientEntry, ClientTable } from './client-table.js';
import { bearerToken } from './key-compare.js';

export const ANONYMOUS = ANONYMOUS_CLIENT;
const UNAUTHORIZED = 'unauthorized';
/** RFC 6750 */
export const KEY_CHALLENGE = 'Bearer realm="magma-gateway"';

export type KeyRule = 'required' | 'optional' | 'ignored';

export interface KeyCarriers {
  path: string | undefined;
  authorization: string | undefined;
  apiKey: string | string[] | undefined;
}

export type Access =
  | { readonly ok: true; readonly client: ClientEntry | undefined }
  | { readonly ok: false; readonly status: 401 | 403 | 404; readonly code: GatewayErrCode; readonly detail: string };

const OPEN: Access = { ok: true, client: undefined };

const HOW = 'put it in the address (http://<gateway>/k/<key>), or send Authorization: Bearer <key> or x-api-key: <key>';

const unauthorized = (detail: string): Access => ({ ok: false, status: 401, code: 'GATEWAY_ERR_UNAUTHORIZED', detail });
const MISSING = unauthorized(`client key required: ${HOW}`);
const UNKNOWN = unauthorized('unknown client key');
const DISAGREE = unauthorized('the client keys in the address and the headers differ: send one key, or the same key in each');
const NO_CLIENTS: Access = {
  ok: false,
  status: 404,
  code: 'GATEWAY_ERR_NOT_FOUND',
  detail: 'this gateway has no client keys (no clients: in its config): remove /k/<key> from the address',
};

export function decideAccess(table: ClientTable | undefined, keys: KeyCarriers, rule: KeyRule): Access {
  if (table === undefined) return keys.path === undefined ? OPEN : NO_CLIENTS;
  if (rule === 'ignored') return OPEN;
  const bearer = bearerToken(keys.authorization);
  const apiKey = typeof keys.apiKey === 'string' ? keys.apiKey : keys.apiKey?.join(', ');
  // All three come from the client: comparing them times nothing secret.
  let key: string | undefined;
  for (const k of [keys.path, bearer, apiKey]) {
    if (k === undefined) continue;
    if (key !== undefined && k !== key) return DISAGREE;
    key = k;
  }
  if (key === undefined) return rule === 'optional' ? OPEN : MISSING;
  const client = table.find(key);
  return client === undefined ? UNKNOWN : { ok: true, client };
}

/** Narrowed to `clients.<name>.agents`; the list is the client's own config, so it may be said. */
export function decideAgent(access: Access, agent: string): Access {
  if (!access.ok || access.client?.agents === undefined || access.client.agents.has(agent)) return access;
  const { name, agents } = access.client;
  const quoted = JSON.stringify(agent.length > 128 ? `${agent.slice(0, 128)}...` : agent);
  const detail = `client "${name}" may not use agent ${quoted} (clients.${name}.agents: ${[...agents].join(', ')})`;
  return { ok: false, status: 403, code: 'GATEWAY_ERR_AGENT_FORBIDDEN', detail };
}

export function accessLabel(access: Access): string {
  if (access.ok) return access.client?.name ?? ANONYMOUS;
  return access.status === 401 ? UNAUTHORIZED : ANONYMOUS;
}

/** The connection is closed: a request body is not read for a client the gateway does not know. */
export function refusalHeaders(access: Extract<Access, { ok: false }>): Record<string, string> {
  return access.status === 401 ? { 'www-authenticate': KEY_CHALLENGE, connection: 'close' } : { connection: 'close' };
}
