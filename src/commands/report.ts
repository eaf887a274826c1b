/**
 * `magma-gateway report http://host:port` (or `--url`; default the admin listener of the example configs): the
 * experiment report of a running gateway (GET /gateway/experiments on its admin listener, docs/operations.md#experiment-report)
 * as tables a person reads in a terminal, one per split or ensemble route
 * of each agent (docs/routing.md#virtual-agents; `--agent` picks one), then for two-arm splits the difference in tool
 * success rate with its interval and p-value.
 * `--json` prints the endpoint's JSON unchanged, for scripts.
 */
import { baseUrl, parseCommandLine, processIo, secondsOption, urlArgument, usageExit, type CommandIo, type Parsed } from './args.js';
import { ROOT_AGENT } from '../config/schema.js';
import type { ArmReport, ExperimentsReport, RouteReport } from '../experiments/report.js';

/** Where `admin.listen` points in config/gateway.yaml and the examples (Envoy's admin port). */
const DEFAULT_ADMIN_URL = 'http://127.0.0.1:9901';

export const REPORT_USAGE = `usage: magma-gateway report [<admin-url>] [--agent <name>] [--token <token>] [--json] [--timeout <seconds>]
       magma-gateway report [--url <admin-url>] [--agent <name>] [--token <token>] [--json] [--timeout <seconds>]
  Prints the A/B and ensemble report of a running gateway (GET /gateway/experiments on its admin listener).
  --url <url>     the gateway's admin listener (admin.listen), default ${DEFAULT_ADMIN_URL} (or give it as the argument)
  --agent <name>  only this agent's experiments: a virtual agent's name, or "${ROOT_AGENT}" for the top-level routes
  --token <t>     admin bearer token for /gateway/* (default: env GATEWAY_ADMIN_TOKEN)
  --json          print the report as JSON
  --timeout <s>   request deadline (default 30)
  exit code: 0 printed, 1 the gateway could not be read, 2 usage error
`;

const REPORT_FLAGS = {
  url: { type: 'string' },
  agent: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** One table cell: one line, no control characters (error codes come from backends and reach the terminal). */
function cell(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\p{Cc}/gu, '?').trim();
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function ms(x: number | null): string {
  return x === null ? '-' : x >= 100 ? String(Math.round(x)) : x.toFixed(1);
}

function toolCell(a: ArmReport): string {
  const t = a.tool_success;
  if (t.rate === null || t.ci95 === null) return '-';
  return `${pct(t.rate)} [${pct(t.ci95[0])}, ${pct(t.ci95[1])}]`;
}

function topCodes(codes: Record<string, number>, n = 3): string {
  const entries = Object.entries(codes).sort((x, y) => y[1] - x[1]);
  if (entries.length === 0) return '-';
  const shown = entries.slice(0, n).map(([c, k]) => `${c} ${k}`);
  return entries.length > n ? `${shown.join(', ')}, +${entries.length - n} more` : shown.join(', ');
}

const HEAD = ['ARM', 'TRAJ', 'STEPS', 'DONE', 'ERR', 'TOOLS OK/FAIL', 'TOOL SUCCESS [95% CI]',
  'ENV ERR', 'FAIL REASON', 'UNPARSED', 'P50 MS', 'P95 MS', 'TOP ERROR CODES'];
/** Columns of counts and numbers are right-aligned; names and free text left-aligned. */
const RIGHT = [false, true, true, true, true, true, true, true, true, true, true, true, false];

function armRow(a: ArmReport): string[] {
  const f = a.feedback;
  return [
    a.member ? a.arm : `${a.arm} (fallback)`,
    String(a.trajectories_started),
    String(a.steps),
    String(a.candidates.completed),
    String(a.candidates.error),
    `${a.tool_success.succeeded}/${a.tool_success.failed}`,
    toolCell(a),
    String(f.env_error),
    String(f.failure_reason),
    String(f.unparsed),
    ms(a.latency_ms.p50),
    ms(a.latency_ms.p95),
    topCodes(a.error_codes),
  ].map(cell);
}

function table(rows: string[][]): string[] {
  const widths = HEAD.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length))); // every row has one cell per column
  const line = (r: string[]): string =>
    r.map((c, i) => (RIGHT[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd(); // widths has one entry per column
  return [line(HEAD), ...rows.map(line)];
}

function signedPts(x: number): string {
  const v = (x * 100).toFixed(1);
  return x > 0 ? `+${v}` : v;
}

/** The B - A line of a two-arm split. */
function comparisonLine(r: RouteReport): string | undefined {
  const c = r.comparison;
  if (c === null) return undefined;
  const what = `${cell(c.b)} - ${cell(c.a)} tool success rate`;
  if (c.difference === null || c.ci95 === null || c.p_value === null) {
    return `${what}: n/a (an arm has no tool outcome yet)`;
  }
  const z = c.z === null ? 'z n/a' : `z = ${c.z.toFixed(2)}`;
  const p = c.p_value < 0.001 ? 'p < 0.001' : `p = ${c.p_value.toFixed(3)}`;
  return `${what}: ${signedPts(c.difference)} pts [95% CI ${signedPts(c.ci95[0])}, ${signedPts(c.ci95[1])}], ${z}, ${p} (${c.test})`;
}

function routeBlocks(routes: readonly RouteReport[]): string[] {
  const out: string[] = [];
  for (const r of routes) {
    const members = Object.entries(r.members).map(([m, w]) => `${m} ${w}`).join(', ');
    out.push(`route ${cell(r.route)}: ${r.kind} ${cell(members)}${r.sticky ? '' : ' (not sticky)'}`);
    out.push(...table(r.arms.map(armRow)));
    const cmp = comparisonLine(r);
    if (cmp !== undefined) out.push(cmp);
    out.push('');
  }
  return out;
}

/**
 * The whole report as text: a header, one block per route, the latency note. With virtual agents (docs/routing.md#virtual-agents)
 * each agent's routes come under a line naming the agent and its path, the default agent first.
 */
export function formatReport(report: ExperimentsReport): string {
  const out: string[] = [`experiments (store: ${report.store}, at ${report.generated_at})`, ''];
  // A gateway older than virtual agents answers no `agents`.
  const agents = report.agents ?? [];
  const none = report.routes.length === 0 && agents.every((a) => a.routes.length === 0);
  if (none) out.push('no route with a split or an ensemble in the current config', '');
  else if (agents.length === 0) out.push(...routeBlocks(report.routes));
  else {
    if (report.routes.length > 0) out.push(`agent ${ROOT_AGENT} (/)`, ...routeBlocks(report.routes));
    for (const a of agents) {
      if (a.routes.length === 0) continue;
      out.push(`agent ${cell(a.agent)} (${cell(a.path)}, agent_id ${cell(a.agent_id)})`, ...routeBlocks(a.routes));
    }
  }
  out.push(`TRAJ = trajectories started; tool success = robot lines that succeeded / (succeeded + failed).`);
  out.push(`latency: ${report.latency_note}.`);
  return `${out.join('\n')}\n`;
}

function isReport(v: unknown): v is ExperimentsReport {
  if (v === null || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>; // checked to be a non-null object above
  return Array.isArray(r.routes) && (r.agents === undefined || Array.isArray(r.agents)) && typeof r.store === 'string' && typeof r.generated_at === 'string';
}

/**
 * The report narrowed to one agent: the default agent's routes, or one virtual agent's. Undefined when the
 * report has no such agent.
 */
function reportForAgent(report: ExperimentsReport, agent: string): ExperimentsReport | undefined {
  if (agent === ROOT_AGENT) return { ...report, agents: [] };
  const one = (report.agents ?? []).find((a) => a.agent === agent);
  return one === undefined ? undefined : { ...report, routes: [], agents: [one] };
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause; // cause is not declared on Error in the lib target
    return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  }
  return String(err);
}

/** The `report` subcommand; `argv` is what follows `report`. Returns the exit code. */
export async function reportCommand(argv: string[], io: CommandIo = processIo): Promise<number> {
  let base: string;
  let seconds: number;
  let values: Parsed['values'];
  try {
    const parsed = parseCommandLine(argv, REPORT_FLAGS, 1);
    values = parsed.values;
    if (values.help === true) {
      io.out(REPORT_USAGE);
      return 0;
    }
    const url =
      parsed.positionals[0] === undefined && typeof values.url !== 'string' ? DEFAULT_ADMIN_URL : urlArgument(parsed, 'admin URL');
    base = baseUrl(url, 'admin URL');
    seconds = secondsOption(values.timeout, '--timeout', 30);
  } catch (err) {
    return usageExit(err, 'report', REPORT_USAGE, io);
  }
  const endpoint = `${base}/gateway/experiments`;
  const token = typeof values.token === 'string' ? values.token : process.env.GATEWAY_ADMIN_TOKEN;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`;

  let body: unknown;
  try {
    const res = await fetch(endpoint, { headers, signal: AbortSignal.timeout(Math.ceil(seconds * 1000)) });
    const text = await res.text();
    if (!res.ok) {
      const hint = res.status === 401 || res.status === 403 ? ' (pass --token or set GATEWAY_ADMIN_TOKEN)' : '';
      io.err(`magma-gateway report: ${endpoint} answered HTTP ${res.status}${hint}: ${cell(text).slice(0, 200)}\n`);
      return 1;
    }
    body = JSON.parse(text);
  } catch (err) {
    io.err(`magma-gateway report: cannot read ${endpoint}: ${describe(err)}\n`);
    return 1;
  }
  if (!isReport(body)) {
    io.err(`magma-gateway report: ${endpoint} did not answer an experiments report\n`);
    return 1;
  }
  let shown: ExperimentsReport = body;
  if (typeof values.agent === 'string') {
    const one = reportForAgent(body, values.agent);
    if (one === undefined) {
      const known = [ROOT_AGENT, ...(body.agents ?? []).map((a) => a.agent)].map(cell).join(', ');
      io.err(`magma-gateway report: the gateway has no agent "${cell(values.agent)}" (agents: ${known})\n`);
      return 1;
    }
    shown = one;
  }
  io.out(values.json ? `${JSON.stringify(shown, null, 2)}\n` : formatReport(shown));
  return 0;
}
