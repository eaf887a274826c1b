/**
 * Starting the processes under test, each in its own process so its CPU and memory are its own:
 * the bench backend agent, the @fastify/http-proxy passthrough, nginx (when installed) and the gateway.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Child, freePort, processTree, waitHttp } from './proc.js';

export interface ServerContext {
  /** Scratch directory for configs, bodies, logs. */
  tmp: string;
  /** dist/bench (compiled bench scripts). */
  benchDir: string;
  /** dist/src/cli.js. */
  gatewayCli: string;
  gatewayLogLevel: string;
  /** Directory for `node --cpu-prof` profiles of the gateway; undefined: no profiling. */
  cpuProfDir?: string;
  /** Extra node flags for the gateway process. */
  nodeArgs: string[];
  /** Top-level keys merged into every gateway config (experiments with gateway settings). */
  extraConfig: Record<string, unknown>;
  /** Every child started, so a failure anywhere can stop them all. */
  children: Set<Child>;
}

export interface Running {
  child: Child;
  url: string;
  /** Pids whose CPU and memory count for this server (nginx: master and workers). */
  pids: () => number[];
}

function spawnTracked(ctx: ServerContext, name: string, command: string, args: string[]): Child {
  const child = new Child(name, command, args, { logFile: join(ctx.tmp, `${name}.log`) });
  ctx.children.add(child);
  void child.waitExit().then(() => ctx.children.delete(child));
  return child;
}

export interface BackendOptions {
  ports?: number;
  baseMs?: number;
  perInputMs?: number;
  perCandidateMs?: number;
  /** Hold answers until this many wait (backend-agent.ts `--gate`); 0: answer at once. */
  gate?: number;
  gateTimeoutMs?: number;
}

export async function startBackend(
  ctx: ServerContext,
  name: string,
  opts: BackendOptions = {},
): Promise<{ child: Child; urls: string[] }> {
  const child = spawnTracked(ctx, name, process.execPath, [
    join(ctx.benchDir, 'backend-agent.js'),
    '--ports',
    String(opts.ports ?? 1),
    '--base-ms',
    String(opts.baseMs ?? 0),
    '--per-input-ms',
    String(opts.perInputMs ?? 0),
    '--per-candidate-ms',
    String(opts.perCandidateMs ?? 0),
    '--gate',
    String(opts.gate ?? 0),
    '--gate-timeout-ms',
    String(opts.gateTimeoutMs ?? 60_000),
  ]);
  const line = await child.waitLine((l) => l.startsWith('{"ports"'), 15_000);
  const { ports } = JSON.parse(line) as { ports: number[] };
  return { child, urls: ports.map((p) => `http://127.0.0.1:${p}`) };
}

/** A bench proxy script (passthrough.js, naive-proxy.js) in front of `upstream`; it prints `{"port":N}`. */
async function startProxyScript(ctx: ServerContext, name: string, script: string, upstream: string, nodeArgs: string[] = []): Promise<Running> {
  const child = spawnTracked(ctx, name, process.execPath, [...nodeArgs, join(ctx.benchDir, script), '--upstream', upstream]);
  const line = await child.waitLine((l) => l.startsWith('{"port"'), 15_000);
  const { port } = JSON.parse(line) as { port: number };
  return { child, url: `http://127.0.0.1:${port}`, pids: () => [child.pid] };
}

export function startPassthrough(ctx: ServerContext, name: string, upstream: string): Promise<Running> {
  return startProxyScript(ctx, name, 'passthrough.js', upstream);
}

/** The naive JSON proxy (bench/naive-proxy.ts): the cheapest proxy that reads what it forwards. `nodeArgs`: node flags. */
export function startNaiveProxy(ctx: ServerContext, name: string, upstream: string, nodeArgs: string[] = []): Promise<Running> {
  return startProxyScript(ctx, name, 'naive-proxy.js', upstream, nodeArgs);
}

/** nginx with one worker (like the single-threaded gateway), keep-alive upstream, bodies kept in memory. */
export async function startNginx(ctx: ServerContext, name: string, nginx: string, upstream: string): Promise<Running> {
  const dir = join(ctx.tmp, name);
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const port = await freePort();
  const u = new URL(upstream);
  const conf = `
worker_processes 1;
daemon off;
master_process on;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 16m;
  proxy_buffer_size 64k;
  proxy_buffers 256 64k;
  proxy_busy_buffers_size 256k;
  proxy_max_temp_file_size 0;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  upstream agent {
    server ${u.hostname}:${u.port};
    keepalive 128;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://agent;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_read_timeout 600s;
    }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const child = spawnTracked(ctx, name, nginx, ['-p', dir, '-e', `${dir}/logs/error.log`, '-c', join(dir, 'nginx.conf')]);
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/health`, 200, 15_000, () => !child.exited);
  return { child, url, pids: () => processTree(child.pid) };
}

/** The gateway under test, from a config object (written as YAML), ready when /health answers 200. `nodeArgs`: this one's node flags. */
export async function startGateway(
  ctx: ServerContext,
  name: string,
  config: Record<string, unknown>,
  readyTimeoutMs = 30_000,
  nodeArgs: string[] = [],
): Promise<Running> {
  const port = await freePort();
  const file = join(ctx.tmp, `${name}.yaml`);
  // A scenario's own `server` keys (raised limits) go beside the listener's, not instead of them.
  const { server, ...rest } = config;
  const full = {
    log_level: ctx.gatewayLogLevel,
    ...rest,
    server: { host: '127.0.0.1', port, body_limit_mb: 64, ...(typeof server === 'object' && server !== null ? server : {}) },
    ...ctx.extraConfig,
  };
  writeFileSync(file, stringify(full));
  // Plain `node CLI`, as every start command runs it; --gateway-node-args adds node flags to try (a
  // --heap-growing-percent there is kept by the gateway instead of its own).
  const args: string[] = [...ctx.nodeArgs, ...nodeArgs];
  if (ctx.cpuProfDir !== undefined) args.push('--cpu-prof', `--cpu-prof-dir=${ctx.cpuProfDir}`, `--cpu-prof-name=${name}.cpuprofile`);
  args.push(ctx.gatewayCli, '--config', file, '--host', '127.0.0.1', '--port', String(port));
  const child = spawnTracked(ctx, name, process.execPath, args);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHttp(`${url}/health`, 200, readyTimeoutMs, () => !child.exited);
  } catch (err) {
    await child.stop(1000);
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n--- gateway output ---\n${child.output()}`, {
      cause: err,
    });
  }
  return { child, url, pids: () => [child.pid] };
}

/** Sum of a Prometheus counter's samples whose labels contain `labelFilter` (all when empty). */
export function promSum(text: string, metric: string, labelFilter = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(metric)) continue;
    const rest = line.slice(metric.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    if (labelFilter !== '' && !rest.includes(labelFilter)) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}
