/**
 * `magma-gateway check <agent-url>`: a conformance probe against the MAGMA Agent HTTP contract v2.0. Checks run one
 * at a time, as BENCH sends requests, so an agent is judged on its contract, not its concurrency.
 */
import { baseUrl, cell, commandArgs, processIo, positiveOption, table, urlArgument, type CommandIo } from './args.js';
import { checkBatch, checkEmpty, checkMemory, checkOrdering } from './check-cases.js';
import { describeError, openTarget, TransportError, type CheckResult, type ProbeTarget } from './check-http.js';
import { checkHealth, checkInfo, checkInvalid, HEALTH, INFO, INVALID_BODIES } from './check-probes.js';
import { GatewayError } from '../errors.js';

interface CheckOptions {
  timeoutMs?: number;
}

/** Per request. BENCH waits 360 s; a probe asks for a few candidates of a trivial prompt, a minute is plenty. */
const DEFAULT_TIMEOUT_MS = 60_000;

interface CheckSpec {
  name: string;
  /** Resolves to the PASS detail, or to ready-made rows (the info check may add a note row); throws to FAIL. */
  run: (t: ProbeTarget) => Promise<string | CheckResult[]>;
}

const SPECS: CheckSpec[] = [
  { name: HEALTH, run: checkHealth },
  { name: INFO, run: checkInfo },
  { name: 'ordering 7x2 3x1', run: checkOrdering },
  { name: 'batch 4 inputs 1+3+1+2', run: checkBatch },
  { name: 'empty inputs', run: checkEmpty },
  { name: 'memory round trip', run: checkMemory },
  ...INVALID_BODIES.map((b) => ({ name: b.name, run: (t: ProbeTarget) => checkInvalid(t, b.body()) })),
];

/** Never rejects because of the agent. */
export async function runChecks(url: string, opts: CheckOptions = {}): Promise<CheckResult[]> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new GatewayError('GATEWAY_ERR_USAGE', `timeoutMs must be > 0, got ${timeoutMs}`);
  let base: string;
  try {
    base = baseUrl(url, 'agent URL'); // as BENCH uses it
  } catch (err) {
    return SPECS.map((s) => ({ name: s.name, ok: false, detail: `not run: ${describeError(err)}` }));
  }
  const target = openTarget(base, timeoutMs);
  try {
    return await runAll(target);
  } finally {
    await target.dispatcher.destroy();
  }
}

async function runAll(target: ProbeTarget): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  let unreachable: string | undefined;
  for (const spec of SPECS) {
    if (unreachable !== undefined) {
      // Health got no HTTP answer at all: every other request would wait for the same refusal or timeout.
      results.push({ name: spec.name, ok: false, detail: `not run: agent unreachable (${unreachable})` });
      continue;
    }
    try {
      const r = await spec.run(target);
      if (typeof r === 'string') results.push({ name: spec.name, ok: true, detail: r });
      else results.push(...r);
    } catch (err) {
      // Our own errors carry the judgement in their message (their cause is only the evidence).
      results.push({ name: spec.name, ok: false, detail: err instanceof Error ? err.message : String(err) });
      if (spec.name === HEALTH && err instanceof TransportError) unreachable = err.message;
    }
  }
  return results;
}

export function formatTable(results: readonly CheckResult[]): string {
  const rows = results.map((r) => [cell(r.name), r.ok ? 'PASS' : 'FAIL', cell(r.detail)]);
  const passed = results.filter((r) => r.ok).length;
  return [...table(['CHECK', 'RESULT', 'DETAIL'], [], rows), '', `${passed} passed, ${results.length - passed} failed`].join('\n');
}

export const CHECK_USAGE = `usage: magma-gateway check <agent-url> [--timeout <seconds>] [--json]
       magma-gateway check --url <agent-url> [--timeout <seconds>] [--json]
  Tests an agent against the MAGMA Agent HTTP contract v2.0 and prints a PASS/FAIL table.
  --url <url>    the agent, e.g. http://127.0.0.1:8001 (or give it as the argument)
  --timeout <s>  deadline of each request (default ${DEFAULT_TIMEOUT_MS / 1000})
  --json         print the results as JSON instead of a table
  exit code: 0 all checks pass, 1 some fail, 2 usage error
`;

const CHECK_FLAGS = {
  url: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function checkCommand(argv: string[], io: CommandIo = processIo): Promise<number> {
  const a = commandArgs(argv, CHECK_FLAGS, 1, { name: 'check', usage: CHECK_USAGE, io }, (parsed) => ({
    seconds: positiveOption(parsed.values.timeout, '--timeout', DEFAULT_TIMEOUT_MS / 1000),
    json: parsed.values.json === true,
    base: baseUrl(urlArgument(parsed, 'agent URL'), 'agent URL'),
  }));
  if ('exit' in a) return a.exit;
  const { base, seconds, json } = a.args;

  const results = await runChecks(base, { timeoutMs: Math.ceil(seconds * 1000) });
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  if (json) io.out(`${JSON.stringify({ agent: base, passed, failed, results }, null, 2)}\n`);
  else io.out(`magma-gateway check ${base}\n\n${formatTable(results)}\n`);
  return failed === 0 ? 0 : 1;
}
