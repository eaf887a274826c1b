/**
 * The memory budget's bench (docs/memory-budget.md): the element-count and budget cases, each sent to one
 * gateway started from its CLI with `--config` and `server.memory_budget_mb: 400`, its backends plain HTTP
 * servers in this process (what they answer costs the gateway, not them). For each case: the statuses, the
 * time, the longest wait of a `/health` probe sent every 20 ms meanwhile from a process of its own, the
 * gateway's peak RSS over the case (VmHWM, reset before it through /proc/PID/clear_refs) against the budget
 * (+250 MB allowed), and its RSS 15 s after the case ended against the budget. A row passes when all four hold: no status but 200, 422 and the
 * budget's 503 (no 5xx, no dropped connection), /health under 100 ms, both RSS figures within their bounds.
 *
 *   node dist/bench/memory-rows.js [--cli PATH] [--legacy] [--only name,name]
 *     --cli PATH   the gateway CLI to start (default: this tree's dist/src/cli.js), e.g. an older build's
 *     --legacy     the older config key (server.max_bytes_in_flight_mb) instead of memory_budget_mb
 *   MEMROWS_NODE_ARGS="--flag ..." passes node flags to the gateway (MEMROWS_GATEWAY_STDOUT=1 shows its stdout, for
 *   --trace-gc); MEMROWS_PORT picks its port;
 *   MEMROWS_ROW_CAP_S caps each case (default 600 s). A gateway a case killed is started again for the next.
 *
 * Also run by `npm run bench -- --scenario MEMROWS`, which prints the same table.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { memInfo } from './lib/proc.js';
import { MEMORY_ROWS } from './scenarios.js';

const MB = 1024 * 1024;
const BUDGET_MB = MEMORY_ROWS.budgetMb;
const SLACK_MB = MEMORY_ROWS.slackMb;

interface Row {
  name: string;
  statuses: Record<string, number>;
  ms: number;
  healthMaxMs: number;
  /** VmHWM over the case, MB. */
  peakMb: number;
  /** VmRSS MEMORY_ROWS.afterS after the case ended, MB. */
  afterMb: number;
  note: string;
  pass: boolean;
}

/** The statuses a case may end with: answered, refused (bounded 422), or the documented budget 503. */
const ALLOWED = new Set(['200', '422', '503']);
const HEALTH_MAX_MS = 100;

/** Reset the process's VmHWM to its current RSS (Linux: clear_refs 5), so each case gets its own peak. */
function resetPeak(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // An older kernel: the peak stays the process's, the larger figure
  }
}

function zerosArray(bytes: number): Buffer {
  const n = Math.floor(bytes / 2);
  return Buffer.concat([Buffer.from('['), Buffer.alloc((n - 1) * 2, '0,'), Buffer.from('0]')]);
}

const INFO = JSON.stringify({
  agent_id: 'rows', agent_version: '1', protocol_version: '2.0', contract_version: '2.0',
  capabilities: { inference: true, coaching: false },
});

/** A request as a backend here keeps it: its size, and its bytes up to a little over 1 MB (all of a smaller one). */
type Received = { body: Buffer; size: number; url: string };
type Answer = (req: Received, res: ServerResponse) => void;

/** A backend on loopback: /health and /v1/info answered, /v1/responses by `answer`. */
async function backend(answer: Answer): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Only the head of a large body is kept: joining 50 MB here held this process's event loop, the one the
    // /health probe runs on, for up to 90 ms, which showed in the gateway's /health figure.
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      if (size <= MB) chunks.push(c);
      size += c.length;
    });
    req.on('end', () => {
      if (req.url === '/health') return void res.end('{"status":"ready"}');
      if (req.url === '/v1/info') return void res.end(INFO);
      answer({ body: Buffer.concat(chunks), size, url: req.url ?? '' }, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return { url: `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`, server };
}

/** The candidates a request asks for: its request_id, and each input's id and num_outputs, read from its bytes. */
function asked({ body, size }: Received): { request_id: string; inputs: { id: number; num_outputs?: number }[] } {
  // A large body (the cases' one input of millions of members or megabytes) is not parsed here: this process's
  // own stall would show in the /health figure. Its request_id and one input are read from its first bytes.
  const head = body.subarray(0, 4096).toString('latin1');
  return size > MB
    ? { request_id: /"request_id":"([^"]*)"/.exec(head)?.[1] ?? '', inputs: [{ id: Number(/"id":(\d+)/.exec(head)?.[1] ?? 1), num_outputs: 1 }] }
    : (JSON.parse(body.toString()) as { request_id: string; inputs: { id: number; num_outputs?: number }[] });
}

/**
 * The candidates of a request written to `res` as pieces around one shared say of `say.length` bytes: no
 * string of megabytes is built per answer here (this process's own stall would show in the /health figure).
 */
function writeCandidates(received: Received, say: Buffer, res: ServerResponse): void {
  const req = asked(received);
  const pieces: Buffer[] = [Buffer.from('[')];
  for (const inp of req.inputs) {
    for (let c = 0; c < (inp.num_outputs ?? 1); c++) {
      const head = `${pieces.length > 1 ? ',' : ''}{"request_id":${JSON.stringify(req.request_id)},"source_id":${inp.id},"candidate_index":${c},"status":"completed","memory":{},"internal_steps":[],"output":{"say":"`;
      pieces.push(Buffer.from(head), say, Buffer.from('","tool_calls":[]},"error":null}'));
    }
  }
  pieces.push(Buffer.from(']'));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(pieces.reduce((n, p) => n + p.length, 0)) });
  for (const p of pieces) res.write(p);
  res.end();
}

/** The candidates of a request (ids and num_outputs read from its bytes), each with `pad` bytes of say. */
function candidates(received: Received, pad: number): Buffer {
  const req = asked(received);
  const out: string[] = [];
  const say = 's'.repeat(pad);
  for (const inp of req.inputs) {
    for (let c = 0; c < (inp.num_outputs ?? 1); c++) {
      out.push(JSON.stringify({ request_id: req.request_id, source_id: inp.id, candidate_index: c, status: 'completed', memory: {}, internal_steps: [], output: { say, tool_calls: [] }, error: null }));
    }
  }
  return Buffer.from(`[${out.join(',')}]`);
}

function post(url: string, body: Buffer, opts: { path?: string; chunked?: boolean; timeoutMs?: number } = {}): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname, port: u.port, path: opts.path ?? '/v1/responses', method: 'POST', agent: false,
        headers: opts.chunked === true ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': String(body.length) },
      },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', () => resolve({ status: -1, bytes }));
      },
    );
    req.setTimeout(opts.timeoutMs ?? 400_000, () => req.destroy());
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code === 'ECONNRESET' || err.code === 'ECONNREFUSED' ? -1 : -2, bytes: 0 }));
    for (let at = 0; at < body.length; at += MB) req.write(body.subarray(at, at + MB));
    req.end();
  });
}

/**
 * The /health prober's own process: it does nothing else, so the longest wait it sees is the gateway's, not a
 * stall of this process (which builds, sends and reads hundreds of megabytes per case). It asks with node:http
 * over one kept-alive connection, as a health checker does: with fetch, the prober's own client added waits of
 * up to 400 ms that a plain HTTP prober beside it, probing the same gateway at the same time, did not see (its
 * longest was 127 ms). One probe first, not timed (the connection opens), then "ready" on stdout; it probes
 * every 20 ms until a line arrives on its stdin, then prints the longest answer time in ms.
 */
const PROBER = `
const http = require('node:http');
const url = process.argv[1] + '/health';
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
let stopped = false;
let worst = 0;
process.stdin.on('data', () => { stopped = true; });
const probe = () => new Promise((resolve) => {
  const req = http.get(url, { agent, timeout: 60000 }, (res) => { res.resume(); res.on('end', resolve); res.on('error', resolve); });
  req.on('timeout', () => req.destroy());
  req.on('error', resolve);
});
(async () => {
  await probe();
  process.stdout.write('ready\\n');
  while (!stopped) {
    const t = performance.now();
    await probe();
    worst = Math.max(worst, performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write(String(worst), () => process.exit(0));
})();
`;

/** Probes /health every 20 ms from a process of its own until stopped; resolves once it probes. */
async function healthProbe(url: string): Promise<{ stop(): Promise<number> }> {
  const child = spawn(process.execPath, ['-e', PROBER, url], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (s: string) => {
      out += s;
      if (out.includes('\n')) resolve();
    });
    void exited.then(() => resolve());
  });
  out = out.slice(out.indexOf('\n') + 1);
  return {
    async stop() {
      child.stdin.end('stop\n');
      await exited;
      const worst = Number(out);
      // A prober that died says nothing of the gateway: the figure is then unknown, and the row fails.
      return out !== '' && Number.isFinite(worst) ? worst : Number.POSITIVE_INFINITY;
    },
  };
}

function countStatuses(xs: { status: number }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[String(x.status)] = (out[String(x.status)] ?? 0) + 1;
  return out;
}

const input = (id: number, memory: string, numOutputs = 1): string =>
  `{"id":${id},"instruction":{"type":"user","content":"x"},"memory":${memory},"num_outputs":${numOutputs}}`;

interface Gateway {
  url: string;
  child: ChildProcess;
  alive(): boolean;
}

async function startGateway(cli: string, legacy: boolean, backends: Record<string, string>, routes: unknown[]): Promise<Gateway> {
  const dir = mkdtempSync(join(tmpdir(), 'memrows-'));
  // The task's own port range; MEMROWS_PORT picks one (two runs side by side).
  const port = Number(process.env.MEMROWS_PORT ?? 16430 + Math.floor(Math.random() * 10));
  const server: Record<string, unknown> = { host: '127.0.0.1', port, body_limit_mb: 128 };
  if (legacy) server.max_bytes_in_flight_mb = BUDGET_MB;
  else server.memory_budget_mb = BUDGET_MB;
  const config = {
    log_level: 'error',
    probe_interval_s: 3600,
    probe_timeout_s: 30,
    server,
    // Identical concurrent batches (one body sent n times) each computed, not coalesced by idempotent replay.
    state: { replay_ttl_s: 0 },
    backends: Object.fromEntries(Object.entries(backends).map(([k, url]) => [k, { url }])),
    routes,
  };
  const file = join(dir, 'gateway.json');
  writeFileSync(file, JSON.stringify(config));
  // Started as every start command starts it, plain `node CLI`; MEMROWS_NODE_ARGS: node flags to try against the
  // rows (a --cpu-prof, a V8 flag).
  const nodeArgs = (process.env.MEMROWS_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, cli, '--config', file], { stdio: ['ignore', process.env.MEMROWS_GATEWAY_STDOUT === '1' ? 'inherit' : 'ignore', 'inherit'] });
  let exited = false;
  child.on('exit', () => (exited = true));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300 && !exited; i++) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) return { url, child, alive: () => !exited };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the gateway did not start (${cli})`);
}

export async function runMemoryRows(opts: { cli: string; legacy: boolean; only?: string[] }): Promise<{ rows: Row[]; peakMb: number; after15sMb: number; lines: string[] }> {
  // Backends: plain, one answering 100 MB of zeros, one answering ~25 MB per candidate, one endless.
  const plain = await backend((r, res) => res.end(candidates(r, 10)));
  const zeros = zerosArray(100 * MB);
  const flood = await backend((_r, res) => res.end(zeros));
  const say = Buffer.alloc(25 * MB, 's');
  const big = await backend((r, res) => writeCandidates(r, say, res));
  const endless = await backend((_r, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('[');
    const chunk = Buffer.alloc(MB, 0x20);
    const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(chunk)), 5);
    res.on('close', () => clearInterval(timer));
  });
  const start = (): Promise<Gateway> => startGateway(opts.cli, opts.legacy, { plain: plain.url, flood: flood.url, big: big.url, big2: big.url, endless: endless.url }, [
    { name: 'ens-flood', match: { 'attributes.case': 'ens-flood' }, ensemble: { plain: 1, flood: 1 } },
    { name: 'shadow-flood', match: { 'attributes.case': 'shadow-flood' }, backend: 'plain', shadow: ['flood'] },
    { name: 'shadow-endless', match: { 'attributes.case': 'shadow-endless' }, backend: 'plain', shadow: ['endless'] },
    { name: 'ens-big', match: { 'attributes.case': 'ens-big' }, ensemble: { big: 1, big2: 1 } },
    { name: 'default', backend: 'plain' },
  ]);
  // A gateway a case killed is started again for the next one (an older build's rows), and a case is capped
  // at MEMROWS_ROW_CAP_S (its gateway killed): each row says what that case does on its own.
  let gw = await start();
  const capMs = Number(process.env.MEMROWS_ROW_CAP_S ?? 600) * 1000;
  const rows: Row[] = [];
  const tagged = (c: string): string => `"attributes":{"case":"${c}"}`;
  const withCase = (c: string, memory = '{}', numOutputs = 1): string => input(1, memory, numOutputs).replace('"memory"', `${tagged(c)},"memory"`);

  /** One case: its bodies built first (this process's own work stays out of the /health figure), then sent. */
  async function row<T>(name: string, note: string, prepare: () => T, run: (bodies: T) => Promise<{ status: number }[]>): Promise<void> {
    if (opts.only !== undefined && !opts.only.includes(name)) return;
    if (!gw.alive()) gw = await start();
    const pid = gw.child.pid ?? 0;
    const bodies = prepare();
    await new Promise((r) => setTimeout(r, 200));
    resetPeak(pid);
    let peak = memInfo([pid]).hwmMb;
    const sampler = setInterval(() => (peak = Math.max(peak, memInfo([pid]).hwmMb)), 100);
    const probe = await healthProbe(gw.url);
    const t = performance.now();
    let cap: NodeJS.Timeout | undefined;
    const capped = new Promise<'capped'>((r) => (cap = setTimeout(() => r('capped'), capMs)));
    const outcome = await Promise.race([run(bodies), capped]);
    clearTimeout(cap);
    if (outcome === 'capped') gw.child.kill('SIGKILL');
    const results = outcome === 'capped' ? [{ status: -3 }] : outcome;
    const ms = performance.now() - t;
    const healthMaxMs = await probe.stop();
    if (gw.alive()) await new Promise((r) => setTimeout(r, MEMORY_ROWS.afterS * 1000));
    clearInterval(sampler);
    const alive = gw.alive();
    const afterMb = alive ? memInfo([pid]).rssMb : Number.NaN;
    if (alive) peak = Math.max(peak, memInfo([pid]).hwmMb);
    const statuses = countStatuses(results);
    const pass = alive && Object.keys(statuses).every((k) => ALLOWED.has(k)) && healthMaxMs < HEALTH_MAX_MS && peak <= BUDGET_MB + SLACK_MB && afterMb <= BUDGET_MB;
    const r = { name, statuses, ms, healthMaxMs, peakMb: peak, afterMb, note: alive ? note : `${note} (${outcome === 'capped' ? `capped at ${capMs / 1000} s: killed` : 'the gateway died'})`, pass };
    rows.push(r);
    console.error(
      `${name}: ${JSON.stringify(statuses)} in ${(ms / 1000).toFixed(1)} s, /health at most ${healthMaxMs.toFixed(0)} ms, ` +
        `peak RSS ${peak.toFixed(0)} MB, RSS ${MEMORY_ROWS.afterS} s after ${afterMb.toFixed(0)} MB: ${pass ? 'PASS' : 'FAIL'}`,
    );
  }

  const zerosBody = (mb: number): Buffer => Buffer.concat([Buffer.from('{"request_id":"z","inputs":'), zerosArray(mb * MB), Buffer.from('}')]);
  const one = async (b: Buffer, o?: Parameters<typeof post>[2]): Promise<{ status: number }[]> => [await post(gw.url, b, o)];
  await row('zeros-8mb', '8 MB {"inputs":[0,0,...]}', () => zerosBody(8), one);
  await row('zeros-32mb', '32 MB {"inputs":[0,0,...]}', () => zerosBody(32), one);
  await row('ens-flood', 'a backend answering 100 MB [0,0,...] to an ensemble', () => Buffer.from(`{"request_id":"e","inputs":[${withCase('ens-flood', '{}', 2)}]}`), one);
  await row('shadow-flood', 'a shadow answering 100 MB [0,0,...]', () => Buffer.from(`{"request_id":"s","inputs":[${withCase('shadow-flood')}]}`), one);
  const members = (n: number): string => {
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(`"k${i}":1`);
    return `{${parts.join(',')}}`;
  };
  const membersBody = (id: string, n: number): Buffer => Buffer.from(`{"request_id":"${id}","inputs":[${input(1, members(n))}]}`);
  const all = (bs: Buffer[], o?: Parameters<typeof post>[2]): Promise<{ status: number }[]> => Promise.all(bs.map((b) => post(gw.url, b, o)));
  await row('members-4x40mb', '4 concurrent ~40 MB batches, memory of 3.3M members', () => { const b = membersBody('m', 3_300_000); return [0, 1, 2, 3].map(() => b); }, all);
  await row('members-8x60mb', '8 concurrent ~60 MB batches, memory of 5M members', () => { const b = membersBody('n', 5_000_000); return [0, 1, 2, 3, 4, 5, 6, 7].map(() => b); }, all);
  await row('shadow-endless', '8 batches whose shadow answer never ends', () => [0, 1, 2, 3, 4, 5, 6, 7].map((i) => Buffer.from(`{"request_id":"se${i}","inputs":[${withCase('shadow-endless')}]}`)), all);
  await row('ens-big-16', '16 concurrent ensemble batches, ~50 MB answer each', () => Array.from({ length: 16 }, (_, i) => Buffer.from(`{"request_id":"b${i}","inputs":[${withCase('ens-big', '{}', 2)}]}`)), all);
  const exp = (last: string): Buffer =>
    Buffer.concat([
      Buffer.from('{"request_id":"x","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"x":['),
      Buffer.alloc(15 * MB * 4, '1e5,'),
      Buffer.from(`1e5]}}]${last}`),
    ]);
  await row('exp-60mb', 'one 60 MB valid body of exponent numbers', () => exp('}'), one);
  await row('exp-60mb-bad', 'one 60 MB body invalid at its last byte', () => exp('x'), one);
  await row('headers-only', '8 connections send headers for 60 MB and no body, then a 100-byte batch', () => undefined, async () => {
    const port = new URL(gw.url).port;
    const silent: Socket[] = [];
    for (let i = 0; i < 8; i++) {
      const s = connect(Number(port), '127.0.0.1');
      s.on('error', () => undefined);
      s.write(`POST /v1/responses HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${60 * MB}\r\n\r\n`);
      silent.push(s);
    }
    await new Promise((r) => setTimeout(r, 200));
    const r = await post(gw.url, Buffer.from(`{"request_id":"small","inputs":[${input(1, '{}')}]}`));
    for (const s of silent) s.destroy();
    return [r];
  });
  const pad = (id: string): Buffer => Buffer.from(`{"request_id":"${id}","inputs":[${input(1, `{"p":"${'p'.repeat(50 * MB)}"}`)}]}`);
  await row('query-10x50mb', '10 concurrent 50 MB batches to /v1/responses?x', () => { const b = pad('q'); return Array.from({ length: 10 }, () => b); }, (bs) => all(bs, { path: '/v1/responses?x' }));
  await row('chunked-10x50mb', '10 concurrent 50 MB chunked batches', () => { const b = pad('c'); return Array.from({ length: 10 }, () => b); }, (bs) => all(bs, { chunked: true }));

  const peakMb = Math.max(0, ...rows.map((r) => r.peakMb));
  const after15sMb = rows.at(-1)?.afterMb ?? Number.NaN;
  // SIGTERM first: the gateway drains and exits (a --cpu-prof in NODE_OPTIONS then writes its profile).
  const exited = new Promise((r) => gw.child.once('exit', r));
  gw.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
  if (gw.alive()) gw.child.kill('SIGKILL');
  for (const b of [plain, flood, big, endless]) {
    b.server.closeAllConnections();
    b.server.close();
  }
  const lines = [
    `| case | statuses | time (s) | longest /health (ms) | peak RSS (MB) | RSS ${MEMORY_ROWS.afterS} s after (MB) | row |`,
    `|---|---|---|---|---|---|---|`,
    ...rows.map(
      (r) =>
        `| ${r.note} | ${JSON.stringify(r.statuses)} | ${(r.ms / 1000).toFixed(1)} | ${r.healthMaxMs.toFixed(0)} | ${r.peakMb.toFixed(0)} | ${r.afterMb.toFixed(0)} | ${r.pass ? 'PASS' : 'FAIL'} |`,
    ),
    '',
    `budget ${BUDGET_MB} MB: peak RSS within ${BUDGET_MB + SLACK_MB} MB, RSS ${MEMORY_ROWS.afterS} s after each case within ${BUDGET_MB} MB, /health under ${HEALTH_MAX_MS} ms; ` +
      `${rows.filter((r) => r.pass).length} of ${rows.length} rows pass; load average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}`,
  ];
  return { rows, peakMb, after15sMb, lines };
}

if (process.argv[1]?.endsWith('memory-rows.js')) {
  const { values } = parseArgs({ options: { cli: { type: 'string' }, legacy: { type: 'boolean', default: false }, only: { type: 'string' } } });
  const cli = values.cli ?? new URL('../src/cli.js', import.meta.url).pathname;
  const r = await runMemoryRows({ cli, legacy: values.legacy, only: values.only?.split(',') });
  console.log(r.lines.join('\n'));
}
