/**
 * Start a real gateway (buildApp + listen on 127.0.0.1:0) from a config object, as the CLI would from YAML.
 * Unless told otherwise (or the config sets admin.listen itself) the admin listener runs on 127.0.0.1:0 too.
 */
import type { FastifyInstance } from 'fastify';
import { stringify } from 'yaml';
import { listenAdmin } from '../../src/admin-app.js';
import { buildApp } from '../../src/app.js';
import { parseConfigText } from '../../src/config/load.js';
import { http } from './config-file.js';
import { agentInput } from './inputs.js';

export interface TestGateway {
  url: string;
  /** The admin listener's URL (/gateway/*); empty when started with `{ admin: false }`. */
  adminUrl: string;
  app: FastifyInstance;
  close(): Promise<void>;
  post(body: string | object, headers?: Record<string, string>): Promise<{ status: number; text: string; json: unknown; headers: Headers }>;
}

/** The config with `admin.listen: 127.0.0.1:0` added unless it has one or `admin` is false. */
export function withAdminListener(config: Record<string, unknown>, admin = true): Record<string, unknown> {
  const block = (config.admin ?? {}) as Record<string, unknown>;
  if (!admin || block.listen !== undefined) return config;
  return { ...config, admin: { ...block, listen: '127.0.0.1:0' } };
}

export async function startGateway(
  config: Record<string, unknown>,
  opts: { admin?: boolean; defaultMetrics?: boolean } = {},
): Promise<TestGateway> {
  const cfg = parseConfigText(stringify(withAdminListener(config, opts.admin)), 'test-config.yaml', {});
  const app = await buildApp({ config: cfg, logger: false, defaultMetrics: opts.defaultMetrics ?? false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    adminUrl: (await listenAdmin(app)) ?? '',
    app,
    close: () => app.close(),
    post(body, headers = {}) {
      return http(`${url}/v1/responses`, { method: 'POST', body, headers });
    },
  };
}

/** A contract-valid input as JSON, with defaults; override any field. */
export function mkInput(id: number | string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...agentInput({ id, instruction: { type: 'user', content: `task for ${id}` } }), ...over };
}

/** POST a batch that must answer 200; its candidates. */
export async function postOk(gw: TestGateway, requestId: string, inputs: object[]): Promise<Cand[]> {
  const res = await gw.post({ request_id: requestId, inputs });
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
