/**
 * The `magma-gateway` command run as a user runs it: `node dist/src/cli.js ...` in its own process, its stdout
 * and stderr collected, with a way to wait for a given log line (an event, never a sleep).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const CLI = join(process.cwd(), 'dist/src/cli.js');

export interface CliRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process ended and both streams are drained. */
  exit: Promise<number | null>;
  /** Resolves with the first parsed JSON log line on stdout for which `pred` holds; rejects if the process ends first. */
  logLine(pred: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Every JSON log line printed on stdout so far. */
  logLines(): Record<string, unknown>[];
}

const running: ChildProcess[] = [];

/** Kill whatever a test left running (call from `after`). */
export function killAll(): void {
  for (const c of running) if (c.exitCode === null) c.kill('SIGKILL');
}

function parseLines(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const l of text.split('\n')) {
    if (!l.startsWith('{')) continue;
    try {
      out.push(JSON.parse(l) as Record<string, unknown>);
    } catch {
      // a line still being written
    }
  }
  return out;
}

/** `nodeArgs` go to node itself, before the script (an operator's own V8 flag). */
export function runCli(args: string[], env: Record<string, string | undefined> = {}, nodeArgs: string[] = []): CliRun {
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  running.push(child);
  let out = '';
  let err = '';
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
  let ended = false;
  const failWaiters: ((e: Error) => void)[] = [];
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    const lines = parseLines(out);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const hit = lines.find(waiters[i]!.pred);
      if (hit !== undefined) waiters.splice(i, 1)[0]!.resolve(hit);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      ended = true;
      for (const f of failWaiters) f(new Error(`process ended (code ${code}) before the log line; stdout:\n${out}\nstderr:\n${err}`));
      resolve(code);
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exit,
    logLines: () => parseLines(out),
    logLine(pred) {
      const hit = parseLines(out).find(pred);
      if (hit !== undefined) return Promise.resolve(hit);
      if (ended) return Promise.reject(new Error(`process ended before the log line; stdout:\n${out}\nstderr:\n${err}`));
      return new Promise((resolve, reject) => {
        waiters.push({ pred, resolve });
        failWaiters.push(reject);
      });
    },
  };
}
