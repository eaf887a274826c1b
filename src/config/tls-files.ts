/** The PEM files of server.tls and backends.<name>.tls (docs/deployment.md#tls), read again on every reload. */
import { readFileSync } from 'node:fs';
import { createSecureContext, Server as TlsServer } from 'node:tls';
import { GatewayError } from '../errors.js';
import type { GatewayConfig } from './schema.js';

type ServerTlsConfig = NonNullable<GatewayConfig['server']['tls']>;
type BackendTlsConfig = NonNullable<GatewayConfig['backends'][string]['tls']>;

export interface BackendTlsOptions {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  rejectUnauthorized: boolean;
}

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
    throw new TlsFileError(`${key}: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** Checks that the files make a usable context (a key that fits its certificate). */
export function readServerTls(tls: ServerTlsConfig, prefix = 'server.tls') {
  const opts = {
    cert: readPem(`${prefix}.cert`, tls.cert),
    key: readPem(`${prefix}.key`, tls.key),
    ca: tls.ca === undefined ? undefined : readPem(`${prefix}.ca`, tls.ca),
    requestCert: tls.request_cert,
    rejectUnauthorized: tls.reject_unauthorized,
  };
  checkContext(prefix, opts);
  return opts;
}

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

function checkContext(prefix: string, opts: { cert?: Buffer; key?: Buffer; ca?: Buffer }): void {
  try {
    createSecureContext({ cert: opts.cert, key: opts.key, ca: opts.ca });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new TlsFileError(`${prefix}: the certificate, key or CA files are not usable: ${why}`, { cause: err });
  }
}

/** Read before the reload commits. Turning TLS on or off, or changing request_cert / reject_unauthorized, is `kept`. */
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
      if (!(server instanceof TlsServer)) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'server.tls was set at start, yet the front server is not node:https');
      server.setSecureContext({ cert: opts.cert, key: opts.key, ca: opts.ca });
    },
  };
}
