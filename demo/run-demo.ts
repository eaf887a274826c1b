/**
 * `npm run demo`: two demo agents behind the gateway, driven the way BENCH and GEN drive an agent.
 *
 * 1. Starts the talker and actor agents as their own processes on free ports (fixed ports collide with whatever
 *    else runs on a developer machine or CI), writes a temporary gateway config pointing at them.
 * 2. Spawns the gateway as a user would (`node dist/src/cli.js --config <file>`) and waits for GET /health = 200.
 * 3. Plays a 3-step episode for 4 trajectories in one batch per step (BENCH-like), carrying each candidate's
 *    memory forward, then one ensemble step (GEN-like, 4 candidates of one input), printing who answered what.
 * 4. Prints the experiment report (the `report` subcommand's table, read from the gateway's admin listener),
 *    stops everything, exits 0. With `--keep` (`npm run demo -- --keep`) it stays up instead, printing the
 *    console's address (docs/console.md), until Ctrl-C. With `--port BASE` (`npm run demo -- --port 8100`) it
 *    uses BASE to BASE+3 (gateway, admin, talker, actor) instead of free ports.
 * Any HTTP error, invalid answer, error candidate or lost big integer exits 1; the whole demo is capped at 60 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonNumberText, numberMark, parseExact, stringifyExact } from '../src/protocol/json/exact-json.js';
import type { AgentOutput, JsonObject, ToolCall } from '../src/protocol/types.js';
import { reportCommand } from '../src/commands/report.js';

const DEMO_TIMEOUT_MS = 60_000;
const READY_TIMEOUT_MS = 20_000;
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const GATEWAY_CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const AGENTS = {
  talker: fileURLToPath(new URL('./agents/talker.js', import.meta.url)),
  actor: fileURLToPath(new URL('./agents/actor.js', import.meta.url)),
};
/** Kept in memory from step 1 to the end: proves big integers cross agent and gateway digit for digit. */
const SEED = '12345678901234567890';
const TRAJECTORIES = 4;
const ARGS = process.argv.slice(2);
/** `--keep`: stay up after the episode so the console can be looked at. */
const KEEP = ARGS.includes('--keep');
/**
 * `--port BASE`: the gateway on BASE, its admin listener on BASE+1, the talker and actor agents on BASE+2 and
 * BASE+3 (`npm run demo -- --port 8100`), for a machine where the ports in use are agreed; else free ports.
 */
const BASE_PORT = basePort(ARGS);

function basePort(args: string[]): number | undefined {
  const at = args.indexOf('--port');
  if (at < 0) return undefined;
  const text = args[at + 1] ?? '';
  const n = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= 65532)) {
    process.stderr.write(`run-demo: --port needs a base port from 1 to 65532 (four ports from it are used), got "${text}"\n`);
    process.exit(2);
  }
  return n;
}

const TOOLS: JsonObject[] = [
  {
    name: 'press_button',
    description: 'Press a button.',
    parameters: { id: { type: 'str', description: 'Button name.' } },
  },
];
const ATTRIBUTES: JsonObject = { known_robots: ['panda'] };

class DemoError extends Error {}

const children: ChildProcess[] = [];
let tmpDir: string | undefined;

function log(line = ''): void {
  process.stdout.write(`${line}\n`);
}

// ---------------------------------------------------------------------------------------------- processes

/** Relay a child's output with a prefix, so gateway warnings stay readable between the tables. */
function relay(child: ChildProcess, prefix: string, onLine?: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let buf = '';
    stream?.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (onLine) onLine(line);
        else if (line.trim()) log(`  ${prefix} | ${line}`);
      }
    });
  }
}

/** Start a demo agent process on `port` (0: a free one); resolves with its URL from its "listening on" line. */
function startAgent(name: keyof typeof AGENTS, port: number): Promise<string> {
  const child = spawn(process.execPath, [AGENTS[name], '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    relay(child, name, (line) => {
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]!);
      else if (line.trim()) log(`  ${name} | ${line}`);
    });
    child.once('exit', (code) => reject(new DemoError(`${name} agent exited with code ${code}`)));
  });
}

/** A free loopback port for the gateway (its CLI takes the port from the config file). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The demo's gateway config: config/gateway.yaml's routes and backends, pointed at this run's agents, with quieter
 * logs and faster probes so the demo starts in about a second.
 */
function gatewayConfig(port: number, adminPort: number, talker: string, actor: string): string {
  return `# Written by demo/run-demo.ts for one run; deleted when the demo ends.
server: { host: 127.0.0.1, port: ${port} }
admin: { listen: "127.0.0.1:${adminPort}" }   # the admin API (/gateway/*), on loopback: no token needed
agent: { agent_id: magma-gateway-demo }
log_level: warn
request_timeout_s: 30
probe_interval_s: 1
experiments: { snapshot_interval_s: 5 }   # the console's chart gets a point every 5 s
backends:
  talker: { url: "${talker}", timeout_s: 10 }
  actor: { url: "${actor}", timeout_s: 10 }
routes:
  - name: ensemble              # GEN-style: candidates shared between both agents
    match: { extra_keys.ensemble: true }
    ensemble: { talker: 1, actor: 1 }
    sticky: false
    fallback: [talker, actor]   # a failing member's candidates go to the other one
  - name: ab                    # catch-all A/B test, sticky per trajectory
    split: { talker: 50, actor: 50 }   # no fallback onto its own arms: a crossover would blur the experiment
`;
}

async function waitReady(base: string, gateway: ChildProcess): Promise<void> {
  const until = Date.now() + READY_TIMEOUT_MS;
  let last = 'no answer';
  while (Date.now() < until) {
    if (gateway.exitCode !== null) throw new DemoError(`the gateway exited with code ${gateway.exitCode} while starting`);
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) });
      const text = await res.text();
      if (res.status === 200) return;
      last = `${res.status} ${text}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new DemoError(`the gateway was not ready after ${READY_TIMEOUT_MS / 1000} s (last /health: ${last})`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const forced = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(forced);
}

async function cleanup(): Promise<void> {
  // Gateway first (it is the last child), so it never sees its backends vanish mid-batch.
  for (const c of [...children].reverse()) await stopChild(c);
  if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------- HTTP

async function postResponses(base: string, body: JsonObject): Promise<AgentOutput[]> {
  const res = await fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: stringifyExact(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new DemoError(`POST /v1/responses answered HTTP ${res.status}: ${text.slice(0, 500)}`);
  const value = parseExact(text).value;
  if (!Array.isArray(value)) throw new DemoError(`POST /v1/responses answered a non-array: ${text.slice(0, 200)}`);
  return value as AgentOutput[];
}

/** The candidates must come back exactly in (input order, candidate_index) order, like BENCH checks. */
function checkOrder(requestId: string, inputs: { id: number; num_outputs: number }[], outs: AgentOutput[]): void {
  const want = inputs.flatMap((i) => Array.from({ length: i.num_outputs }, (_, c) => `${i.id}/${c}`));
  const got = outs.map((o) => `${jsonNumberText(o.source_id) ?? '?'}/${jsonNumberText(o.candidate_index) ?? '?'}`);
  if (want.join() !== got.join()) throw new DemoError(`candidates out of contract order: want ${want.join(' ')}, got ${got.join(' ')}`);
  if (outs.some((o) => o.request_id !== requestId)) throw new DemoError('a candidate does not echo the request_id');
}

// ---------------------------------------------------------------------------------------------- printing

function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

function describeDecision(o: AgentOutput): string {
  if (o.status === 'error') return `ERROR ${o.error?.code ?? '?'}: ${o.error?.message ?? ''}`;
  const calls = o.output?.tool_calls ?? [];
  if (calls.length > 0) {
    return calls.map((c) => `${c.target_robot_name}.${c.name}(${stringifyExact(c.arguments)})`).join('; ');
  }
  return `say: ${o.output?.say ?? ''}`;
}

function gatewayTag(o: AgentOutput): { backend: string; route: string } {
  const tag = o.memory._gateway;
  const rec = typeof tag === 'object' && tag !== null ? (tag as JsonObject) : {};
  return { backend: String(rec.backend ?? '?'), route: String(rec.route ?? '?') };
}

function printTable(title: string, rows: string[][]): void {
  const head = ['input', 'cand', 'backend', 'route', 'decision'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  log(`\n${title}`);
  log(line(head));
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) log(line(r));
}

// ---------------------------------------------------------------------------------------------- episode

/** Python json.dumps output (", " / ": " separators, ASCII escapes): what BENCH's executors put in env content. */
function pyDumps(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(pyDumps).join(', ')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.entries(v).map(([k, x]) => `${pyDumps(k)}: ${pyDumps(x)}`).join(', ')}}`;
  }
  if (typeof v === 'string') {
    return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }
  return JSON.stringify(v);
}

/** The executor's feedback on a trajectory's previous decision. */
function envFeedback(prev: AgentOutput): string {
  const calls: ToolCall[] = prev.output?.tool_calls ?? [];
  if (calls.length === 0) {
    return pyDumps({ error: 'The answer did not call any tool: the button is still not pressed.' });
  }
  const infos = calls
    .map((c) => `${c.target_robot_name}: ${c.name} succeed with message: button ${String(c.arguments.id ?? '?')} pressed`)
    .join('\n');
  const previous: JsonObject = {};
  for (const c of calls) previous[c.target_robot_name] = { name: c.name, arguments: c.arguments };
  return pyDumps({ infos, previous_tool_call: previous });
}

interface Step {
  title: string;
  instruction: (id: number, prev: AgentOutput | undefined) => { type: 'user' | 'env'; content: string };
}

const STEPS: Step[] = [
  { title: 'step 1: user instruction', instruction: () => ({ type: 'user', content: 'Press the button sw0 to open the door.' }) },
  { title: 'step 2: environment feedback', instruction: (_id, prev) => ({ type: 'env', content: envFeedback(prev!) }) },
  { title: 'step 3: user follow-up', instruction: () => ({ type: 'user', content: 'Thanks. Now press sw1 as well, please.' }) },
];

async function playEpisode(base: string): Promise<number> {
  let prev: AgentOutput[] = [];
  const backendsSeen = new Map<number, string[]>();
  let errors = 0;
  for (const step of STEPS) {
    const requestId = randomUUID().replace(/-/g, '');
    const inputs = Array.from({ length: TRAJECTORIES }, (_, id) => ({
      id,
      instruction: step.instruction(id, prev[id]),
      tools: TOOLS,
      attributes: ATTRIBUTES,
      // Step 1 starts fresh trajectories (plus the seed); later steps continue with the returned memory as is.
      memory: prev[id]?.memory ?? { episode_seed: numberMark(SEED) },
      num_outputs: 1,
      extra_keys: { inference_mode: true },
    }));
    const outs = await postResponses(base, { request_id: requestId, inputs });
    checkOrder(requestId, inputs, outs);
    const rows = outs.map((o, id) => {
      const { backend, route } = gatewayTag(o);
      const seen = backendsSeen.get(id) ?? [];
      seen.push(backend);
      backendsSeen.set(id, seen);
      if (o.status === 'error') errors++;
      const switched = seen.length > 1 && seen[seen.length - 2] !== backend ? ' (switched!)' : '';
      return [String(id), '0', backend + switched, route, clip(describeDecision(o), 100)];
    });
    printTable(`${step.title}  (request_id ${requestId})`, rows);
    prev = outs;
  }
  const kept = prev.filter((o) => jsonNumberText(o.memory.episode_seed) === SEED).length;
  log(`\nmemory round-trip: episode_seed ${SEED} kept digit for digit in ${kept}/${TRAJECTORIES} trajectories`);
  if (kept !== TRAJECTORIES) throw new DemoError('a big integer in memory did not survive the round trip');
  return errors;
}

async function playEnsemble(base: string): Promise<number> {
  const requestId = randomUUID().replace(/-/g, '');
  const inputs = [
    {
      id: 0,
      instruction: { type: 'user' as const, content: 'Press the button sw2.' },
      tools: TOOLS,
      attributes: ATTRIBUTES,
      memory: {},
      num_outputs: 4,
      extra_keys: { inference_mode: false, ensemble: true },
    },
  ];
  const outs = await postResponses(base, { request_id: requestId, inputs });
  checkOrder(requestId, inputs, outs);
  const rows = outs.map((o) => {
    const { backend, route } = gatewayTag(o);
    return ['0', String(jsonNumberText(o.candidate_index)), backend, route, clip(describeDecision(o), 100)];
  });
  printTable(`ensemble step: 1 input, num_outputs 4  (request_id ${requestId})`, rows);
  return outs.filter((o) => o.status === 'error').length;
}

/** The experiment report as an operator reads it: `magma-gateway report --url <admin listener>`. */
async function printExperiments(adminBase: string): Promise<void> {
  log('\nmagma-gateway report --url ' + adminBase);
  const code = await reportCommand(['--url', adminBase]);
  if (code !== 0) throw new DemoError(`the report command exited ${code}`);
}

// ---------------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  if (!existsSync(GATEWAY_CLI)) throw new DemoError(`${GATEWAY_CLI} not found: build the gateway first (npm run build)`);
  const from = (offset: number): number => (BASE_PORT === undefined ? 0 : BASE_PORT + offset);
  const [talker, actor] = await Promise.all([startAgent('talker', from(2)), startAgent('actor', from(3))]);
  log(`talker agent: ${talker}`);
  log(`actor agent:  ${actor}`);

  // Both held open at once, so they differ.
  const [port, adminPort] = BASE_PORT === undefined ? await Promise.all([freePort(), freePort()]) : [BASE_PORT, BASE_PORT + 1];
  tmpDir = mkdtempSync(join(tmpdir(), 'magma-gateway-demo-'));
  const configPath = join(tmpDir, 'gateway.yaml');
  writeFileSync(configPath, gatewayConfig(port, adminPort, talker, actor));
  const gateway = spawn(process.execPath, [GATEWAY_CLI, '--config', configPath], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(gateway);
  relay(gateway, 'gateway');
  const base = `http://127.0.0.1:${port}`;
  const adminBase = `http://127.0.0.1:${adminPort}`;
  log(`gateway:      ${base}  (node dist/src/cli.js --config ${configPath})`);
  log(`admin:        ${adminBase}/gateway/`);
  await waitReady(base, gateway);
  log('gateway ready: GET /health = 200');

  const errors = (await playEpisode(base)) + (await playEnsemble(base));
  await printExperiments(adminBase);
  if (errors > 0) throw new DemoError(`${errors} candidate(s) came back as errors`);
  log('\ndemo finished: every step answered, in order, by the agents the routes chose.');
  if (KEEP) await keepUp(adminBase);
}

/** `--keep`: the demo stays up, its console at the admin listener, until SIGINT (Ctrl-C) or SIGTERM. */
async function keepUp(adminBase: string): Promise<void> {
  clearTimeout(timer);
  log(`\nconsole:      ${adminBase}/   (open it in a browser; Ctrl-C stops the demo)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  log('stopping');
}

const timer = setTimeout(() => {
  log(`\ndemo failed: timed out after ${DEMO_TIMEOUT_MS / 1000} s`);
  for (const c of children) c.kill('SIGKILL');
  if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
  process.exit(1);
}, DEMO_TIMEOUT_MS);

main().then(
  async () => {
    await cleanup();
    clearTimeout(timer);
    process.exit(0);
  },
  async (err: unknown) => {
    log(`\ndemo failed: ${err instanceof DemoError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    clearTimeout(timer);
    process.exit(1);
  },
);
