/**
 * What the HTTP layer remembers of a request's client (docs/operations.md#client-keys) between the places that see it:
 * the key the address carried (`/k/<key>`, stripped from `req.url` before anything routes on it) and the
 * access decision (src/clients/access.ts), which the metrics label, the batch route and the access log read.
 * Kept in WeakMaps keyed by the node request, never on an object that is logged or serialized, and gone with
 * the request.
 *
 * Two ways in: the front's listener strips the prefix first thing (http/batch-front.ts), and fastify's
 * `rewriteUrl` (app.ts) does it for requests that did not come through that listener (`app.inject()`); a
 * request the front has stripped is not stripped twice (`/k/a/k/b/...` routes `/k/b/...`, a path nobody serves).
 */
import type { IncomingMessage } from 'node:http';
import { accessLabel, ANONYMOUS, decideAccess, type Access, type KeyRule } from '../clients/access.js';
import type { ClientTable } from '../clients/client-table.js';
import { KEY_PREFIX, REDACTED_KEY, redactKeyPaths, splitKeyPath } from '../clients/key-path.js';

const pathKeys = new WeakMap<IncomingMessage, string>();
const accesses = new WeakMap<IncomingMessage, Access>();

/** The `/k/<key>` prefix a logged URL shows instead of the key. */
const REDACTED_PREFIX = `${KEY_PREFIX}${REDACTED_KEY}`;

/** Strip a leading `/k/<key>` from `req.url`; the key (decoded), or undefined when the URL has none. */
export function takeKeyPath(req: IncomingMessage): string | undefined {
  const url = req.url;
  if (url === undefined || !url.startsWith(KEY_PREFIX)) return undefined;
  const split = splitKeyPath(url);
  if (split === undefined) return undefined;
  req.url = split.rest;
  return split.key;
}

/** The front hands a stripped request to fastify: the key goes with it. */
export function rememberPathKey(req: IncomingMessage, key: string): void {
  pathKeys.set(req, key);
}

/** The key the address carried, if any. */
export function pathKeyOf(req: IncomingMessage): string | undefined {
  return pathKeys.get(req);
}

/**
 * fastify's `rewriteUrl`: the URL fastify routes, without `/k/<key>`. fastify keeps the URL it was given as
 * `originalUrl`; that copy is redacted, so nothing reading it later can show the key.
 */
export function rewriteKeyUrl(req: IncomingMessage & { originalUrl?: string }): string {
  if (!pathKeys.has(req)) {
    const key = takeKeyPath(req);
    if (key !== undefined) pathKeys.set(req, key);
  }
  if (pathKeys.has(req)) req.originalUrl = REDACTED_PREFIX + (req.url ?? '/');
  return req.url ?? '/';
}

export function rememberAccess(req: IncomingMessage, access: Access): void {
  accesses.set(req, access);
}

/** The `client` label of the request metrics: the client's name, `anonymous` or `unauthorized`. */
export function clientLabelOf(req: IncomingMessage): string {
  const access = accesses.get(req);
  return access === undefined ? ANONYMOUS : accessLabel(access);
}

/** The URL as a log line may show it: the key the address carried, and any other `/k/<segment>`, redacted. */
export function loggableUrl(req: IncomingMessage, url: string): string {
  return (pathKeys.has(req) ? REDACTED_PREFIX : '') + redactKeyPaths(url);
}

/** The access decision for a node request: its address key (`pathKey`) and its two headers, by `rule`. */
export function accessFor(table: ClientTable | undefined, req: IncomingMessage, pathKey: string | undefined, rule: KeyRule): Access {
  return decideAccess(table, { path: pathKey, authorization: req.headers.authorization, apiKey: req.headers['x-api-key'] }, rule);
}
