/**
 * Start a real gateway (buildApp + listen on 127.0.0.1:0) from a config object, as the CLI would from YAML, with
 * the test defaults of `withTestDefaults`.
 */
import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';
import { listenAdmin } from '../../src/admin-app.js';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { http, type HttpAnswer, type HttpInit } from './config-file.js';
import { agentInput } from './inputs.js';

export interface TestGateway {
  url: string;
  /** The admin listener's URL (/gateway/*); empty when started with `{ admin: false }`. */
  adminUrl: string;
  app: FastifyInstance;
  close(): Promise<void>;
  /** POST /v1/responses: a string or bytes sent as they are, anything else as JSON. */
  post(body: string | Uint8Array | object, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** GET (or `init.method`) a path of the agent port, e.g. `call('/metrics')`, `call('/k/KEY/v1/responses', { method: 'POST', body })`. */
  call(path: string, init?: HttpInit): Promise<HttpAnswer>;
}

/** What buildApp logs to: false (the default in tests) or the options of a logger writing to a stream the test reads. */
export type AppLogger = Parameters<typeof buildApp>[0]['logger'];

/**
 * What a test gateway's config gets unless it says otherwise: probes an hour apart, so only the probe at start
 * runs (a test of probing sets `probe_interval_s` itself), and, unless `admin` is false, the admin listener on
 * 127.0.0.1:0.
 */
export function withTestDefaults(config: Record<string, unknown>, admin = true): Record<string, unknown> {
  const probed = { probe_interval_s: 3600, ...config };
  const block = (config.admin ?? {}) as Record<string, unknown>;
  if (!admin || block.listen !== undefined) return probed;
  return { ...probed, admin: { ...block, listen: '127.0.0.1:0' } };
}

export async function startGateway(
  config: Record<string, unknown>,
  opts: { admin?: boolean; defaultMetrics?: boolean; logger?: AppLogger } = {},
): Promise<TestGateway> {
  const cfg = parseConfigText(stringify(withTestDefaults(config, opts.admin)), 'test-config.yaml', {});
  const app = await buildApp({ config: cfg, logger: opts.logger ?? false, defaultMetrics: opts.defaultMetrics ?? false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return { ...gatewayAt(url), adminUrl: (await listenAdmin(app)) ?? '', app, close: () => app.close() };
}

/** A gateway listening at `url` that the test did not build (a CLI process, say), spoken to as a test gateway is. */
export type RemoteGateway = Pick<TestGateway, 'url' | 'post' | 'call'>;

export function gatewayAt(url: string): RemoteGateway {
  return {
    url,
    post: (body, headers = {}) => http(`${url}/v1/responses`, { method: 'POST', body, headers }),
    call: (path, init) => http(url + path, init),
  };
}

/** A contract-valid input as JSON, with defaults; override any field. */
export function mkInput(id: number | string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...agentInput({ id, instruction: { type: 'user', content: `task for ${id}` } }), ...over };
}

/** POST a batch that must answer 200 (to any gateway with a `post`: a test gateway, a file gateway); its candidates. */
export async function postOk(gw: Pick<TestGateway, 'post'>, requestId: string, inputs: object[], headers?: Record<string, string>): Promise<Cand[]> {
  const res = await gw.post({ request_id: requestId, inputs }, headers);
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${res.text}`);
  return res.json as Cand[];
}

export interface Cand {
  request_id: string;
  source_id: number;
  candidate_index: number;
  status: 'completed' | 'error';
  memory: Record<string, unknown> & {
    _gateway?: {
      backend: string; route: string; arm?: string;
      // On experiment routes (docs/experiments.md#the-trajectory-in-the-tag).
      trajectory?: string; experiment?: string; step?: number; s?: number; n?: number; stages?: number; hash?: string; flags?: string;
      stratum?: number; key?: string;
    };
  };
  internal_steps: unknown[];
  output: { say: string; tool_calls: unknown[] } | null;
  error: { code: string; message: string; component: string | null } | null;
}
