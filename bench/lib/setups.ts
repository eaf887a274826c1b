/** Setting up each kind of scenario: its backends, baselines and gateway, and what is read after its rounds. */
import { request } from 'undici';
import type { EnsembleParams, ProxyParams, ShardParams } from '../scenarios.js';
import { bodyText, historyRequest, smallRequest } from './bodies.js';
import { byId, noteErrors } from './gateway-errors.js';
import { MEMORY_KEY, type Prepared, type Setup } from './measure.js';
import { stopAll, tryStart, type RunContext } from './run-context.js';
import { startBackend, startGateway, startNaiveProxy, startNginx, startPassthrough, type Running } from './servers.js';
import { ratio } from './stats.js';
import type { Role, ScenarioId } from './types.js';

/** S1 and S2: one backend, direct vs passthrough vs nginx vs gateway. */
export async function setupProxyScenario(run: RunContext, id: ScenarioId, p: ProxyParams): Promise<Setup> {
  const name = id.toLowerCase();
  const body = p.historyKb > 0 ? historyRequest(`bench-${name}`, p.inputs, p.historyKb) : smallRequest(`bench-${name}`, 1, p.inputs);
  const connections = p.connections;
  const backend = await startBackend(run.server, `${name}-backend`);
  const up = backend.urls[0]!;
  const backendPids = (): number[] => [backend.child.pid];
  const proxy = await tryStart('passthrough', () => startPassthrough(run.server, `${name}-passthrough`, up));
  const naive = await tryStart('naive proxy', () => startNaiveProxy(run.server, `${name}-naive`, up));
  const nginxPath = run.opts.nginxPath;
  const nginx = nginxPath === undefined ? undefined : await tryStart('nginx', () => startNginx(run.server, `${name}-nginx`, nginxPath, up));
  const gateway = await tryStart('gateway', () =>
    startGateway(run.server, `${name}-gateway`, {
      backends: { agent: { url: up } },
      routes: [{ name: 'default', backend: 'agent' }],
    }),
  );
  const targets: Prepared[] = [
    { id: 'direct', label: 'direct (backend)', role: 'direct', url: up, body, front: backendPids, backend: backendPids },
  ];
  const add = (tid: string, label: string, role: Role, r: Running | string | undefined): void => {
    if (r === undefined) return;
    if (typeof r === 'string') targets.push({ id: tid, label, role, error: r, body, front: () => [], backend: backendPids });
    else targets.push({ id: tid, label, role, url: r.url, body, front: r.pids, backend: backendPids });
  };
  add('passthrough', '@fastify/http-proxy passthrough', 'baseline', proxy);
  add('naive', 'naive JSON proxy (reference)', 'baseline', naive);
  add('nginx', 'nginx (1 worker)', 'baseline', nginx);
  add('gateway', 'magma-gateway', 'gateway', gateway);
  const gw = typeof gateway === 'string' ? undefined : gateway;
  return {
    targets,
    connections,
    params: { inputs: body.inputs.length, requestKb: Math.round(bodyText(body).length / 1024) },
    after: async (res) => {
      await noteErrors(run, res, gw, connections, body.inputs.length);
      const g = byId(res, 'gateway');
      const tags = g?.check?.tags;
      if (tags !== undefined) res.extra.gatewayMemoryTags = tags;
      if (g?.check?.ok === true && Object.keys(tags ?? {}).length === 0) {
        res.notes.push(`the gateway's answer carries no memory.${MEMORY_KEY} tag (docs/routing.md#the-memory-key-and-stickiness)`);
      }
      const p = byId(res, 'passthrough')?.median;
      const ng = byId(res, 'nginx')?.median;
      const d = byId(res, 'direct')?.median;
      const nv = byId(res, 'naive')?.median;
      const gm = g?.median;
      res.extra.ratios = {
        'gateway/passthrough req/s': ratio(gm?.rps, p?.rps),
        'gateway/nginx req/s': ratio(gm?.rps, ng?.rps),
        'gateway/direct req/s': ratio(gm?.rps, d?.rps),
        'gateway/naive proxy req/s': ratio(gm?.rps, nv?.rps),
        'naive proxy/passthrough req/s': ratio(nv?.rps, p?.rps),
        'gateway/passthrough p99': ratio(gm?.p99, p?.p99),
        'gateway/nginx p99': ratio(gm?.p99, ng?.p99),
        'gateway/passthrough CPU per batch': ratio(gm?.frontCpuMsPerBatch, p?.frontCpuMsPerBatch),
      };
    },
    teardown: () =>
      stopAll([
        backend.child,
        typeof proxy === 'string' ? undefined : proxy.child,
        typeof naive === 'string' ? undefined : naive.child,
        nginx === undefined || typeof nginx === 'string' ? undefined : nginx.child,
        gw?.child,
      ]),
  };
}

async function replicaStats(urls: string[]): Promise<{ requests: number; inputs: number }[]> {
  return Promise.all(
    urls.map(async (u) => {
      const r = await request(`${u}/bench/stats`);
      return (await r.body.json()) as { requests: number; inputs: number };
    }),
  );
}

/** S3: 32 inputs over 4 slow replicas behind the gateway vs 1 replica direct. */
export async function setupShard(run: RunContext, S3: ShardParams): Promise<Setup> {
  const timing = { baseMs: S3.baseMs, perInputMs: S3.perInputMs };
  const direct = await startBackend(run.server, 'shard-direct', { ports: 1, ...timing });
  const replicas = await startBackend(run.server, 'shard-replicas', { ports: S3.replicas, ...timing });
  const gateway = await tryStart('gateway', () =>
    startGateway(run.server, 'shard-gateway', {
      backends: { agent: { urls: replicas.urls } },
      routes: [{ name: 'default', backend: 'agent' }],
    }),
  );
  const share = Math.ceil(S3.inputs / S3.replicas);
  const body = smallRequest('bench-shard', 1, S3.inputs);
  const shareBody = smallRequest('bench-shard-share', 1, share);
  const dPids = (): number[] => [direct.child.pid];
  const rPids = (): number[] => [replicas.child.pid];
  const targets: Prepared[] = [
    { id: 'direct', label: `1 replica direct (${S3.inputs} inputs)`, role: 'direct', url: direct.urls[0], body, front: dPids, backend: dPids },
    { id: 'share', label: `1 replica direct, ${share} inputs (ideal share)`, role: 'baseline', url: direct.urls[0], body: shareBody, front: dPids, backend: dPids },
  ];
  const gw = typeof gateway === 'string' ? undefined : gateway;
  if (typeof gateway === 'string') targets.push({ id: 'gateway', label: `gateway, ${S3.replicas} replicas`, role: 'gateway', error: gateway, body, front: () => [], backend: rPids });
  else targets.push({ id: 'gateway', label: `gateway, ${S3.replicas} replicas`, role: 'gateway', url: gateway.url, body, front: gateway.pids, backend: rPids });
  const ideal = S3.baseMs + share * S3.perInputMs;
  return {
    targets,
    connections: 1,
    params: { replicas: S3.replicas, inputs: S3.inputs, baseMs: S3.baseMs, perInputMs: S3.perInputMs, idealMakespanMs: ideal, singleReplicaMs: S3.baseMs + S3.inputs * S3.perInputMs },
    after: async (res) => {
      const stats = await replicaStats(replicas.urls);
      const batches = (byId(res, 'gateway')?.rounds.reduce((a, r) => a + r.ok, 0) ?? 0) + 1; // +1: the check
      res.extra.replicaStats = stats;
      res.notes.push(
        `sub-requests per replica (all gateway traffic incl. warm-up): ${stats.map((s) => `${s.requests} req/${s.inputs} inputs`).join(', ')}; ` +
          `measured gateway batches ${batches}`,
      );
      const g = byId(res, 'gateway')?.median;
      const d = byId(res, 'direct')?.median;
      const sh = byId(res, 'share')?.median;
      res.extra.ratios = {
        [`gateway p50 / ideal ${ideal} ms`]: ratio(g?.p50, ideal),
        'gateway p50 / measured share p50': ratio(g?.p50, sh?.p50),
        'speed-up vs 1 replica (p50)': ratio(d?.p50, g?.p50),
      };
      await noteErrors(run, res, gw, 1, S3.inputs);
    },
    teardown: () => stopAll([direct.child, replicas.child, gw?.child]),
  };
}

/** S4: 8 candidates from an ensemble of two backends vs 8 (and the 4-candidate share) from one, direct. */
export async function setupEnsemble(run: RunContext, S4: EnsembleParams): Promise<Setup> {
  const timing = { baseMs: S4.baseMs, perCandidateMs: S4.perCandidateMs };
  const direct = await startBackend(run.server, 'ensemble-direct', { ports: 1, ...timing });
  const members = await startBackend(run.server, 'ensemble-members', { ports: 2, ...timing });
  const gateway = await tryStart('gateway', () =>
    startGateway(run.server, 'ensemble-gateway', {
      backends: { a: { url: members.urls[0]! }, b: { url: members.urls[1]! } },
      routes: [{ name: 'ensemble', ensemble: { a: 1, b: 1 }, sticky: false }],
    }),
  );
  const share = S4.candidates / 2;
  const body = smallRequest('bench-ensemble', S4.candidates, 1);
  const shareBody = smallRequest('bench-ensemble-share', share, 1);
  const dPids = (): number[] => [direct.child.pid];
  const mPids = (): number[] => [members.child.pid];
  const gw = typeof gateway === 'string' ? undefined : gateway;
  const targets: Prepared[] = [
    { id: 'direct', label: `1 backend direct, ${S4.candidates} candidates`, role: 'direct', url: direct.urls[0], body, front: dPids, backend: dPids },
    { id: 'share', label: `1 backend direct, ${share} candidates (one member's share)`, role: 'baseline', url: direct.urls[0], body: shareBody, front: dPids, backend: dPids },
  ];
  if (typeof gateway === 'string') targets.push({ id: 'gateway', label: 'gateway ensemble a:1 b:1', role: 'gateway', error: gateway, body, front: () => [], backend: mPids });
  else targets.push({ id: 'gateway', label: 'gateway ensemble a:1 b:1', role: 'gateway', url: gateway.url, body, front: gateway.pids, backend: mPids });
  return {
    targets,
    connections: 1,
    params: { candidates: S4.candidates, baseMs: S4.baseMs, perCandidateMs: S4.perCandidateMs, memberShareMs: S4.baseMs + share * S4.perCandidateMs },
    after: async (res) => {
      const stats = await replicaStats(members.urls);
      res.extra.memberStats = stats;
      res.notes.push(`candidates served per member: a ${stats[0]!.inputs} inputs/${stats[0]!.requests} req, b ${stats[1]!.inputs} inputs/${stats[1]!.requests} req`);
      const tags = byId(res, 'gateway')?.check?.tags;
      if (tags !== undefined) res.extra.gatewayMemoryTags = tags;
      const g = byId(res, 'gateway')?.median;
      const sh = byId(res, 'share')?.median;
      const d = byId(res, 'direct')?.median;
      res.extra.ratios = {
        'gateway p50 / share p50': ratio(g?.p50, sh?.p50),
        'gateway p50 / 8-from-one p50': ratio(g?.p50, d?.p50),
      };
      await noteErrors(run, res, gw, 1, S4.candidates);
    },
    teardown: () => stopAll([direct.child, members.child, gw?.child]),
  };
}
