/**
 * A gateway started from a YAML file on disk, as the CLI starts it, so tests can rewrite the file and reload
 * (`POST /gateway/reload` or SIGHUP) the way an operator would. Also small HTTP helpers for the admin API.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';
import { listenAdmin } from '../../src/admin-app.js';
import { buildApp } from '../../src/app.js';
import { loadConfigFile } from '../../src/config/load.js';
import { withTestDefaults, type AppLogger } from './gateway.js';

export interface ConfigFile {
  readonly path: string;
  /** Replace the file with this config (as YAML). */
  write(config: Record<string, unknown>): void;
  /** Replace the file with this exact text (for invalid files). */
  writeText(text: string): void;
  remove(): void;
}

export function configFile(config: Record<string, unknown>): ConfigFile {
  const dir = mkdtempSync(join(tmpdir(), 'magma-gw-test-'));
  const path = join(dir, 'gateway.yaml');
  const file: ConfigFile = {
    path,
    write: (c) => writeFileSync(path, stringify(c)),
    writeText: (t) => writeFileSync(path, t),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
  file.write(config);
  return file;
}

export interface HttpAnswer {
  status: number;
  /** The body decoded as UTF-8 (as `Response.text()` decodes it). */
  text: string;
  /** The body parsed as JSON; undefined when it is not JSON. */
  json: unknown;
  headers: Headers;
  /** The body's bytes as received. */
  bytes: Buffer;
}

export interface HttpInit {
  method?: string;
  /**
   * A string or bytes (a Buffer) are sent as they are, anything else as JSON; either way with
   * `content-type: application/json` unless `headers` set one.
   */
  body?: string | Uint8Array | object;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export async function http(url: string, init: HttpInit = {}): Promise<HttpAnswer> {
  const { body: given } = init;
  // fetch takes a plain Uint8Array, not a Buffer's type: the bytes are copied into one.
  const body = given === undefined ? undefined : typeof given === 'string' ? given : given instanceof Uint8Array ? new Uint8Array(given) : JSON.stringify(given);
  const headers = { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers };
  const res = await fetch(url, { method: init.method ?? 'GET', headers, body, signal: init.signal });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers, bytes };
}

export interface FileGateway {
  url: string;
  /** The admin listener (admin.listen is 127.0.0.1:0 unless the config sets it). */
  adminUrl: string;
  app: FastifyInstance;
  file: ConfigFile;
  /** GET/POST an agent-port path, e.g. `call('/metrics')`. */
  call(path: string, init?: HttpInit): Promise<HttpAnswer>;
  /** GET/POST an admin path, e.g. `admin('/gateway/backends')`. */
  admin(path: string, init?: HttpInit): Promise<HttpAnswer>;
  /** POST /v1/responses. */
  post(body: object, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** Rewrite the file (the test defaults added as at start), then POST /gateway/reload on the admin listener. */
  reload(config?: Record<string, unknown>, headers?: Record<string, string>): Promise<HttpAnswer>;
  close(): Promise<void>;
}

/**
 * Write `config` (with the test defaults of `withTestDefaults`) to a temp file, build the gateway from that file
 * (configPath set) and listen on port 0, the admin listener too.
 */
export async function startGatewayFromFile(config: Record<string, unknown>, opts: { logger?: AppLogger } = {}): Promise<FileGateway> {
  const file = configFile(withTestDefaults(config));
  const app = await buildApp({ config: loadConfigFile(file.path, {}), configPath: file.path, logger: opts.logger ?? false, defaultMetrics: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
  const adminUrl = (await listenAdmin(app)) ?? '';
  const call: FileGateway['call'] = (path, init) => http(url + path, init);
  const admin: FileGateway['admin'] = (path, init) => http(adminUrl + path, init);
  return {
    url,
    adminUrl,
    app,
    file,
    call,
    admin,
    post: (body, headers) => call('/v1/responses', { method: 'POST', body, headers }),
    reload(next, headers) {
      if (next !== undefined) file.write(withTestDefaults(next));
      return admin('/gateway/reload', { method: 'POST', headers });
    },
    async close() {
      await app.close();
      file.remove();
    },
  };
}
