/**
 * `npm run bench`: the gateway against direct calls to the backend, a plain @fastify/http-proxy passthrough and
 * (when installed) nginx, on the same fast loopback backend agents, in alternating rounds. The scenarios and their
 * targets are the table in bench/scenarios.ts; the run itself is bench/lib/run.ts. Writes latest.json and latest.md
 * (default bench/results/, gitignored) and prints the table with PASS/FAIL per target.
 *
 *   npm run bench [-- OPTIONS]
 *     --quick              the scenarios marked quick, short phases, 1 round (CI: proves the harness works)
 *     --full               every scenario and the soak
 *     --scenario S1,S3     only these scenarios (S1..S8, ALLOC: bench/lib/alloc.ts, MEMROWS: bench/memory-rows.ts, and "soak")
 *     --soak               add the S1+S2 soak (default 180 s, --soak-s N)
 *     --duration S --warmup S --rounds N   per-phase measurement
 *     --no-nginx           skip the nginx baseline even when nginx is installed
 *     --log-level L        the gateway's log_level (default warn)
 *     --cpu-prof           run the gateway under `node --cpu-prof` and summarize the hot functions
 *     --gateway-node-args="ARGS"  extra node flags for the gateway process (note the =)
 *     --gateway-extra JSON top-level keys merged into every gateway config, e.g. '{"state":{"replay_max_bytes":1}}'
 *     --compare FILE       compare with an earlier run's latest.json: per-scenario changes, NO-SLOWER target
 *     --compare-tolerance P  a change within ±P% is "same" (default 10)
 *     --out DIR            results directory (default bench/results)
 *     --keep-tmp           keep the scratch directory (configs, bodies, process logs)
 *
 * Exit code: 1 when the harness could not measure something (a target failed to start or answered wrongly);
 * a figure missing its target never fails the run.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readResults } from './lib/compare.js';
import { which } from './lib/proc.js';
import type { BenchOptions } from './lib/run-context.js';
import { DEFAULT_OUT, runBench, writeResults } from './lib/run.js';
import { runMemoryRows } from './memory-rows.js';
import { MEMORY_ROWS, SCENARIOS, SOAK } from './scenarios.js';

/** This file's header: the usage is written once. */
const USAGE = (readFileSync(new URL(import.meta.url), 'utf8').split('*/')[0] ?? '')
  .split('\n')
  .filter((l) => l.startsWith(' *'))
  .map((l) => l.replace(/^ \* ?/, ''))
  .join('\n');

class BenchUsageError extends Error {}

function parseBenchArgs(argv: string[]): BenchOptions | undefined {
  if (argv.includes('--help') || argv.includes('-h')) return undefined;
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        quick: { type: 'boolean', default: false },
        full: { type: 'boolean', default: false },
        soak: { type: 'boolean', default: false },
        'soak-s': { type: 'string' },
        scenario: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        rounds: { type: 'string' },
        'no-nginx': { type: 'boolean', default: false },
        'log-level': { type: 'string', default: 'warn' },
        'cpu-prof': { type: 'boolean', default: false },
        'gateway-extra': { type: 'string' },
        'gateway-node-args': { type: 'string' },
        out: { type: 'string' },
        'keep-tmp': { type: 'boolean', default: false },
        compare: { type: 'string' },
        'compare-tolerance': { type: 'string', default: '10' },
      },
    });
  } catch (err) {
    // node's own words name the option; the stack would not help.
    throw new BenchUsageError(err instanceof Error ? err.message : String(err));
  }
  const a = parsed.values;
  const tolerancePct = Number(a['compare-tolerance']);
  if (!Number.isFinite(tolerancePct) || tolerancePct < 0) throw new Error(`--compare-tolerance ${a['compare-tolerance']}: expected a percentage >= 0`);
  // Read now, before anything runs: a wrong path fails in a second, and --out may overwrite the file later.
  const compare = a.compare === undefined ? undefined : { file: resolve(a.compare), before: readResults(resolve(a.compare)), tolerancePct };
  const named = a.scenario?.split(',').map((s) => s.trim().toUpperCase());
  const scenarios = named ?? [...SCENARIOS.filter((s) => !a.quick || s.quick).map((s) => s.id), ...(a.quick ? [] : [MEMORY_ROWS.id])];
  return {
    scenarios: scenarios.filter((s) => s !== 'SOAK'),
    soak: a.soak || a.full || (named?.includes('SOAK') ?? false),
    soakS: Number(a['soak-s'] ?? SOAK.defaultSeconds),
    durationS: Number(a.duration ?? (a.quick ? 2 : 5)),
    warmupS: Number(a.warmup ?? (a.quick ? 0.5 : 1)),
    rounds: Number(a.rounds ?? (a.quick ? 1 : 3)),
    quick: a.quick,
    mode: a.quick ? 'quick' : a.full ? 'full' : 'default',
    nginxPath: a['no-nginx'] ? undefined : which('nginx'),
    logLevel: a['log-level'],
    cpuProf: a['cpu-prof'],
    gatewayNodeArgs: (a['gateway-node-args'] ?? '').split(' ').filter((x) => x !== ''),
    gatewayExtra: a['gateway-extra'] !== undefined ? (JSON.parse(a['gateway-extra']) as Record<string, unknown>) : {},
    outDir: resolve(a.out ?? DEFAULT_OUT),
    keepTmp: a['keep-tmp'],
    compare,
    argv,
  };
}

async function main(): Promise<number> {
  const opts = parseBenchArgs(process.argv.slice(2));
  if (opts === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const t0 = Date.now();
  if (opts.scenarios.includes(MEMORY_ROWS.id)) {
    // Its own gateway and backends (bench/memory-rows.ts); its table is printed before the others run.
    process.stderr.write(`[bench] ${MEMORY_ROWS.id}: the memory budget's cases\n`);
    const rows = await runMemoryRows({ cli: new URL('../src/cli.js', import.meta.url).pathname, legacy: false });
    process.stdout.write(`${MEMORY_ROWS.id}\n${rows.lines.join('\n')}\n\n`);
    opts.scenarios = opts.scenarios.filter((s) => s !== MEMORY_ROWS.id);
    if (opts.scenarios.length === 0 && !opts.soak) return 0;
  }
  const results = await runBench(opts);
  process.stdout.write(writeResults(results, opts.outDir) + '\n');
  process.stderr.write(`[bench] wrote ${join(opts.outDir, 'latest.json')} and latest.md in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  return results.harnessErrors.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof BenchUsageError) {
      process.stderr.write(`bench: ${err.message} (npm run bench -- --help)\n`);
      process.exit(2);
    }
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
