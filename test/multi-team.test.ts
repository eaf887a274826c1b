/**
 * One gateway for two teams, end to end (docs/routing.md#virtual-agents, docs/operations.md#client-keys, docs/deployment.md#tls and docs/operations.md#tracing): the real
 * CLI, started from a config file with the client keys in its environment, serves two virtual agents with
 * different routes over HTTPS to two clients with different keys, the keys travelling in the agent address
 * as BENCH sends them. Each team shows in the metrics and in its own agent's experiment report (the `report`
 * command), and every batch's trace arrives at a loopback OTLP receiver, continuing the caller's traceparent.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Agent, request } from 'undici';
import { stringify } from 'yaml';
import { killAll, runCli, type CliRun } from './helpers/cli-process.js';
import { startFakeAgent, type FakeAgent } from './helpers/fake-agent.js';
import { mkInput } from './helpers/gateway.js';
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';

const KEY_A = 'team-a-key-0123456789abcdef';
const KEY_B = 'team-b-key-fedcba9876543210';
const ADMIN_TOKEN = 'admin-token-for-the-report';
const TRACE_ID = { a: '0af7651916cd43dd8448eb211c80319c', b: '4bf92f3577b34da6a3ce929d0e0e4736' };
const CALLER_SPAN = { a: 'b7ad6b7169203331', b: '00f067aa0ba902b7' };

const dir = mkdtempSync(join(tmpdir(), 'magma-gw-teams-'));
const agents: Record<string, FakeAgent> = {};
let rx: OtlpReceiver;
let gw: CliRun;
let base: string;
let adminUrl: string;
let tls: Agent;

interface Candidate {
  source_id: number;
  status: string;
  output: { say: string } | null;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await request(url, { dispatcher: tls, headers });
  return { status: res.statusCode, text: await res.body.text() };
}

async function postBatch(url: string, requestId: string, inputs: object[], headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await request(url, {
    method: 'POST',
    dispatcher: tls,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ request_id: requestId, inputs }),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

/** The value of the one exposition line of `name` that carries every label of `labels`. */
function sample(metrics: string, name: string, labels: Record<string, string>): number | undefined {
  const line = metrics
    .split('\n')
    .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

before(async () => {
  const cert = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  execFileSync('/usr/bin/openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' });
  tls = new Agent({ connect: { ca: readFileSync(cert, 'utf8'), servername: 'localhost' } });
  for (const name of ['k1', 'k2', 'w1', 'w2']) agents[name] = await startFakeAgent({ name });
  rx = await startOtlpReceiver();
  const config = {
    server: { host: '127.0.0.1', port: 0, tls: { cert, key } },
    admin: { listen: '127.0.0.1:0', token: ADMIN_TOKEN },
    probe_interval_s: 0.2,
    tracing: { otlp_endpoint: rx.endpoint, sample_ratio: 1, export_interval_s: 0.1 },
    clients: { 'team-a': { key: '${TEAM_A_KEY}' }, 'team-b': { key: '${TEAM_B_KEY}' } },
    backends: Object.fromEntries(Object.entries(agents).map(([n, a]) => [n, { url: a.url }])),
    agents: {
      kitchen: { agent: { agent_id: 'kitchen-ab' }, routes: [{ name: 'ab', split: { k1: 1, k2: 1 } }] },
      warehouse: { agent: { agent_id: 'warehouse-ab' }, routes: [{ name: 'ab', split: { w1: 1, w2: 1 } }] },
    },
  };
  const path = join(dir, 'gateway.yaml');
  writeFileSync(path, stringify(config));
  gw = runCli(['--config', path], { TEAM_A_KEY: KEY_A, TEAM_B_KEY: KEY_B });
  const serving = await gw.logLine((l) => Array.isArray(l.listen));
  base = String((serving.listen as string[])[0]);
  adminUrl = String((await gw.logLine((l) => typeof l.url === 'string' && String(l.msg).startsWith('admin listener'))).url);
});

after(async () => {
  killAll();
  await tls?.close();
  await rx?.close();
  for (const a of Object.values(agents)) await a.close();
  rmSync(dir, { recursive: true, force: true });
});

const teams = [
  { team: 'a' as const, client: 'team-a', key: KEY_A, agent: 'kitchen', agentId: 'kitchen-ab', backends: ['k1', 'k2'] },
  { team: 'b' as const, client: 'team-b', key: KEY_B, agent: 'warehouse', agentId: 'warehouse-ab', backends: ['w1', 'w2'] },
];

test('each team reaches its own agent over HTTPS with the key in its agent address, and only that agent\'s backends', async () => {
  assert.ok(base.startsWith('https://'), base);
  for (const t of teams) {
    const address = `${base}/k/${t.key}/agents/${t.agent}`;
    assert.equal((await get(`${address}/health`)).status, 200);
    const info = await get(`${address}/v1/info`);
    assert.equal(info.status, 200, info.text);
    assert.equal((JSON.parse(info.text) as { agent_id: string }).agent_id, t.agentId);
    const inputs = [1, 2, 3, 4, 5, 6].map((id) => mkInput(id, { memory: { trajectory: `${t.team}-${id}` } }));
    const traceparent = `00-${TRACE_ID[t.team]}-${CALLER_SPAN[t.team]}-01`;
    const res = await postBatch(`${address}/v1/responses`, `run-${t.team}`, inputs, { traceparent });
    assert.equal(res.status, 200, res.text);
    const cands = JSON.parse(res.text) as Candidate[];
    assert.deepEqual(cands.map((c) => c.source_id), [1, 2, 3, 4, 5, 6]);
    for (const c of cands) {
      assert.equal(c.status, 'completed');
      const by = c.output?.say.split(':')[0] ?? '';
      assert.ok(t.backends.includes(by), `${t.agent} answered by ${by}`);
    }
  }
  for (const t of teams) {
    const other = teams.find((o) => o !== t)!; // two teams
    for (const b of other.backends) {
      assert.ok(!agents[b]!.requests.some((r) => r.raw.includes(`"${t.team}-`)), `${b} received a batch of team ${t.team}`);
    }
  }
});

test('a missing or wrong key is refused with 401 on the agent endpoints', async () => {
  const missing = await postBatch(`${base}/agents/kitchen/v1/responses`, 'no-key', [mkInput(1)]);
  assert.equal(missing.status, 401, missing.text);
  assert.equal((JSON.parse(missing.text) as { code: string }).code, 'GATEWAY_ERR_UNAUTHORIZED');
  const wrong = await get(`${base}/k/not-a-key-of-anyone-here/agents/warehouse/v1/info`);
  assert.equal(wrong.status, 401, wrong.text);
  assert.ok(!missing.text.includes(KEY_A) && !wrong.text.includes(KEY_B));
});

test('the metrics count each team by client and each agent\'s inputs by its own routes and backends', async () => {
  const metrics = (await get(`${base}/metrics`)).text;
  for (const t of teams) {
    const answered = sample(metrics, 'magma_gateway_http_requests_total', { endpoint: '/agents/:agent/v1/responses', status_code: '200', client: t.client });
    assert.equal(answered, 1, `${t.client}'s batch`);
    const routed = t.backends.map((b) => sample(metrics, 'magma_gateway_inputs_total', { agent: t.agent, route: 'ab', backend: b }) ?? 0);
    assert.equal(routed.reduce((x, y) => x + y, 0), 6, `${t.agent}'s inputs over ${t.backends.join(', ')}`);
  }
  assert.ok(!metrics.includes(KEY_A) && !metrics.includes(KEY_B), 'no key in the metrics');
});

test('each agent has its own experiment report, with only its own arms', async () => {
  for (const t of teams) {
    const run = runCli(['report', adminUrl, '--agent', t.agent, '--json', '--token', ADMIN_TOKEN]);
    assert.equal(await run.exit, 0, run.stderr());
    const report = JSON.parse(run.stdout()) as { experiments: { agent: string; route: string; arms: { arm: string; trajectories: number }[] }[] };
    assert.ok(report.experiments.every((e) => e.agent === t.agent), 'only this agent\'s experiments');
    const arms = report.experiments.find((e) => e.route === 'ab')?.arms ?? [];
    assert.deepEqual(arms.map((a) => a.arm).sort(), t.backends);
    assert.equal(arms.reduce((n, a) => n + a.trajectories, 0), 6);
  }
});

test("each batch's trace arrives at the OTLP receiver, under the caller's span, with a client span per backend it used", async () => {
  const batchSpan = (spans: readonly ReceivedSpan[], team: 'a' | 'b'): ReceivedSpan | undefined =>
    spans.find((s) => s.kind === SPAN_KIND_SERVER && s.traceId === TRACE_ID[team] && s.parentSpanId === CALLER_SPAN[team]);
  const complete = (spans: readonly ReceivedSpan[]): boolean =>
    teams.every((t) => {
      const server = batchSpan(spans, t.team);
      return server !== undefined && spans.some((s) => s.kind === SPAN_KIND_CLIENT && s.parentSpanId === server.spanId);
    });
  await rx.until('both teams\' batch spans and their client spans', complete, 30_000);
  for (const t of teams) {
    const server = batchSpan(rx.spans, t.team)!; // complete() found it
    const used = rx.spans
      .filter((s) => s.kind === SPAN_KIND_CLIENT && s.parentSpanId === server.spanId)
      .map((s) => String(s.attributes['magma.backend']));
    assert.ok(used.length > 0 && used.every((b) => t.backends.includes(b)), `${t.agent}'s sub-requests went to ${used.join(', ')}`);
  }
  assert.ok(!JSON.stringify(rx.spans).includes(KEY_A) && !JSON.stringify(rx.spans).includes(KEY_B), 'no key in any span');
});
