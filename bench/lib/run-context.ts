/** What every part of one bench run shares: its options, the started processes, the errors that fail the run. */
import type { Child } from './proc.js';
import type { ServerContext } from './servers.js';
import type { BenchResults } from './types.js';

export interface BenchOptions {
  /** Scenario ids to run (S1..S8). */
  scenarios: string[];
  soak: boolean;
  soakS: number;
  durationS: number;
  warmupS: number;
  rounds: number;
  /** Short phases and the floor's quick mode (CI). */
  quick: boolean;
  mode: 'quick' | 'full' | 'default';
  /** nginx binary for the nginx baseline; undefined: skipped. */
  nginxPath: string | undefined;
  logLevel: string;
  cpuProf: boolean;
  gatewayNodeArgs: string[];
  gatewayExtra: Record<string, unknown>;
  outDir: string;
  keepTmp: boolean;
  /** --compare FILE: an earlier run's results (read before anything runs), and the tolerance in percent. */
  compare?: { file: string; before: BenchResults; tolerancePct: number };
  /** The command line, recorded in the results. */
  argv: string[];
}

export interface RunContext {
  opts: BenchOptions;
  server: ServerContext;
  /** A target not measured (failed to start, answered wrongly): the run exits 1. */
  harnessErrors: string[];
}

export function log(msg: string): void {
  process.stderr.write(`[bench] ${msg}\n`);
}

export function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function tryStart<T>(what: string, fn: () => Promise<T>): Promise<T | string> {
  try {
    return await fn();
  } catch (err) {
    log(`${what} failed to start: ${errText(err).split('\n')[0]}`);
    return `${what} failed to start: ${errText(err)}`;
  }
}

export async function stopAll(list: (Child | undefined)[]): Promise<void> {
  // The gateway drains its batches on SIGTERM; the others stop at once.
  await Promise.all(list.map((c) => c?.stop(c.name.includes('gateway') ? 15_000 : 3000)));
}
