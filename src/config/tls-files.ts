/**
 * TLS files (docs/deployment.md#tls): the PEM files that server.tls and backends.<name>.tls name, read when the server or a
 * backend's pool is built and again on every reload, so a renewed certificate is picked up without a restart.
 * A missing or unreadable file is an error naming the config key and the path: the start stops, a reload is
 * refused and the running certificate keeps serving.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext, Server as TlsServer } from 'node:tls';
import { GatewayError } from '../errors.js';
import type { GatewayConfig } from './schema.js';

type ServerTlsConfig = NonNullable<GatewayConfig['server']['tls']>;
type BackendTlsConfig = NonNullable<GatewayConfig['backends'][string]['tls']>;

/** What node:https createServer and setSecureContext take. */
interface ServerTlsOptions {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  requestCert: boolean;
  rejectUnauthorized: boolean;
}

/** What undici's `connect` option takes for an HTTPS origin. */
export interface BackendTlsOptions {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  rejectUnauthorized: boolean;
}

/** A TLS file that cannot be read or used: a config problem, named by its key. */
class TlsFileError extends GatewayError {
  override name = 'TlsFileError';

  constructor(message: string, opts: ErrorOptions = {}) {
    super('GATEWAY_ERR_CONFIG_INVALID', message, opts);
  }
}

function readPem(key: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new TlsFileError(`${key}: cannot read ${path}: ${why}`, { cause: err });
  }
}

/** Read server.tls's files and check that they make a usable context (a key that fits its certificate). */
export function readServerTls(tls: ServerTlsConfig, prefix = 'server.tls'): ServerTlsOptions {
  const opts: ServerTlsOptions = {
    cert: readPem(`${prefix}.cert`, tls.cert),
    key: readPem(`${prefix}.key`, tls.key),
    requestCert: tls.request_cert,
    rejectUnauthorized: tls.reject_unauthorized,
  };
  if (tls.ca !== undefined) opts.ca = readPem(`${prefix}.ca`, tls.ca);
  checkContext(prefix, opts);
  return opts;
}

/** Read backends.<name>.tls's files; undefined when the backend has no tls section. */
export function readBackendTls(backend: string, tls: BackendTlsConfig | undefined): BackendTlsOptions | undefined {
  if (tls === undefined) return undefined;
  const prefix = `backends.${backend}.tls`;
  const opts: BackendTlsOptions = { rejectUnauthorized: tls.reject_unauthorized };
  if (tls.ca !== undefined) opts.ca = readPem(`${prefix}.ca`, tls.ca);
  if (tls.cert !== undefined) opts.cert = readPem(`${prefix}.cert`, tls.cert);
  if (tls.key !== undefined) opts.key = readPem(`${prefix}.key`, tls.key);
  if (tls.servername !== undefined) opts.servername = tls.servername;
  checkContext(prefix, opts);
  return opts;
}

/** A PEM that does not parse, or a key that is not the certificate's, fails here with the key's name. */
function checkContext(prefix: string, opts: { cert?: Buffer; key?: Buffer; ca?: Buffer }): void {
  try {
    createSecureContext({ cert: opts.cert, key: opts.key, ca: opts.ca });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new TlsFileError(`${prefix}: the certificate, key or CA files are not usable: ${why}`, { cause: err });
  }
}

/**
 * A reload's new server.tls, read before the reload commits (a bad file refuses it). `apply` puts the new
 * certificate, key and CA in force for new connections; connections already open keep theirs. Turning TLS on or
 * off, or changing request_cert / reject_unauthorized, needs a restart: they are listed in `kept`.
 */
export function prepareServerTlsReload(
  running: ServerTlsConfig | undefined,
  next: ServerTlsConfig | undefined,
): { kept: string[]; apply: (server: unknown) => void } {
  const kept: string[] = [];
  const none = { kept, apply: () => undefined };
  if (running === undefined && next === undefined) return none;
  if (running === undefined || next === undefined) {
    kept.push(`server.tls: ${next === undefined ? 'removed' : 'added'} in the file, kept as it was until a restart`);
    return none;
  }
  for (const key of ['request_cert', 'reject_unauthorized'] as const) {
    if (running[key] !== next[key]) {
      kept.push(`server.tls.${key}: ${String(next[key])} in the file, ${String(running[key])} until a restart`);
    }
  }
  const opts = readServerTls(next);
  return {
    kept,
    apply: (server) => {
      // The front server is node:https whenever server.tls was set at start (http/batch-front.ts).
      if (!(server instanceof TlsServer)) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'server.tls was set at start, yet the front server is not node:https');
      server.setSecureContext({ cert: opts.cert, key: opts.key, ca: opts.ca });
    },
  };
}
