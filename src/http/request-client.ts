/**
 * A request's client key from its address (docs/operations.md#client-keys), in WeakMaps keyed by the node request:
 * never on an object that is logged or serialized.
 */
import type { IncomingMessage } from 'node:http';
import { accessLabel, ANONYMOUS, decideAccess, type Access, type KeyRule } from '../clients/access.js';
import type { ClientTable } from '../clients/client-table.js';
import { KEY_PREFIX, REDACTED_KEY, redactKeyPaths, splitKeyPath } from '../clients/key-path.js';

const pathKeys = new WeakMap<IncomingMessage, string>();
const accesses = new WeakMap<IncomingMessage, Access>();

const REDACTED_PREFIX = `${KEY_PREFIX}${REDACTED_KEY}`;

/** A `/k/<key>` prefix taken off `req.url`, its key remembered for the request. */
export function takeKeyPath(req: IncomingMessage): string | undefined {
  const url = req.url;
  if (url === undefined || !url.startsWith(KEY_PREFIX)) return undefined;
  const split = splitKeyPath(url);
  if (split === undefined) return undefined;
  req.url = split.rest;
  pathKeys.set(req, split.key);
  return split.key;
}

export function pathKeyOf(req: IncomingMessage): string | undefined {
  return pathKeys.get(req);
}

/** fastify's `rewriteUrl`, for requests that skip the front (`app.inject()`); its `originalUrl` is redacted. */
export function rewriteKeyUrl(req: IncomingMessage & { originalUrl?: string }): string {
  // Not stripped twice: `/k/a/k/b/...` routes `/k/b/...`, a path nobody serves.
  if (!pathKeys.has(req)) takeKeyPath(req);
  if (pathKeys.has(req)) req.originalUrl = REDACTED_PREFIX + (req.url ?? '/');
  return req.url ?? '/';
}

export function rememberAccess(req: IncomingMessage, access: Access): void {
  accesses.set(req, access);
}

export function clientLabelOf(req: IncomingMessage): string {
  const access = accesses.get(req);
  return access === undefined ? ANONYMOUS : accessLabel(access);
}

/** The key the address carried, and any other `/k/<segment>`, redacted. */
export function loggableUrl(req: IncomingMessage, url: string): string {
  return (pathKeys.has(req) ? REDACTED_PREFIX : '') + redactKeyPaths(url);
}

export function accessFor(table: ClientTable | undefined, req: IncomingMessage, pathKey: string | undefined, rule: KeyRule): Access {
  return decideAccess(table, { path: pathKey, authorization: req.headers.authorization, apiKey: req.headers['x-api-key'] }, rule);
}
