/**
 * Process plumbing for the bench: spawning the servers and the load generator as separate processes, reading
 * their CPU time and memory from /proc (Linux), free ports, readiness waits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { request } from 'undici';

let ticksPerSecond: number | undefined;

/** Kernel clock ticks per second (the unit of utime/stime in /proc/<pid>/stat). */
export function clkTck(): number {
  if (ticksPerSecond === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(r.stdout.trim());
    ticksPerSecond = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return ticksPerSecond;
}

interface ProcStat {
  ppid: number;
  /** utime + stime, in clock ticks. */
  ticks: number;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may hold spaces: fields are counted after the last ')'.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
}

/** The pid and all its live descendants (nginx workers under their master). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const p = Number(name);
    if (!Number.isInteger(p)) continue;
    const st = readStat(p);
    if (st === undefined) continue;
    const list = children.get(st.ppid);
    if (list) list.push(p);
    else children.set(st.ppid, [p]);
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop()!;
    out.push(p);
    for (const c of children.get(p) ?? []) stack.push(c);
  }
  return out;
}

/** CPU time (user + system, all threads: GC helpers and libuv pool included) of the given pids, in ms. */
export function cpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const p of pids) ticks += readStat(p)?.ticks ?? 0;
  return (ticks * 1000) / clkTck();
}

export interface MemInfo {
  /** Current resident set, MB. */
  rssMb: number;
  /** Peak resident set since the process started (VmHWM), MB. */
  hwmMb: number;
}

/** Memory of the given pids, summed. */
export function memInfo(pids: readonly number[]): MemInfo {
  let rss = 0;
  let hwm = 0;
  for (const p of pids) {
    let text: string;
    try {
      text = readFileSync(`/proc/${p}/status`, 'utf8');
    } catch {
      continue;
    }
    const r = /VmRSS:\s+(\d+) kB/.exec(text);
    const h = /VmHWM:\s+(\d+) kB/.exec(text);
    if (r) rss += Number(r[1]);
    if (h) hwm += Number(h[1]);
  }
  return { rssMb: rss / 1024, hwmMb: hwm / 1024 };
}

/** Samples a process tree's RSS on an interval: max and a time series, and the largest VmHWM read. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined;
  readonly samples: { t: number; rssMb: number }[] = [];
  maxMb = 0;
  /** VmHWM is exact (the kernel's own peak); sampling it keeps the figure when the process dies before the end. */
  maxHwmMb = 0;

  constructor(
    private readonly pids: () => readonly number[],
    private readonly everyMs = 100,
  ) {}

  start(): this {
    const t0 = Date.now();
    const tick = (): void => {
      const { rssMb, hwmMb } = memInfo(this.pids());
      this.samples.push({ t: Date.now() - t0, rssMb });
      if (rssMb > this.maxMb) this.maxMb = rssMb;
      if (hwmMb > this.maxHwmMb) this.maxHwmMb = hwmMb;
    };
    tick();
    this.timer = setInterval(tick, this.everyMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** A free TCP port on loopback (bind to 0, read, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A child process the bench started, with the tail of its output kept for error messages. */
export class Child {
  readonly proc: ChildProcess;
  readonly name: string;
  private tail = '';
  private readonly lineWaiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  private buffered = '';
  /** Recent stdout lines no waiter took yet (a line can arrive before its waiter is registered). */
  private readonly backlog: string[] = [];
  private log: WriteStream | undefined;
  exited = false;
  exitCode: number | null = null;
  private readonly exitWaiters: (() => void)[] = [];

  constructor(name: string, command: string, args: string[], opts: { env?: NodeJS.ProcessEnv; logFile?: string } = {}) {
    this.name = name;
    this.proc = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    if (opts.logFile !== undefined) this.log = createWriteStream(opts.logFile);
    this.proc.stdout?.setEncoding('utf8');
    this.proc.stderr?.setEncoding('utf8');
    this.proc.stdout?.on('data', (s: string) => this.onStdout(s));
    this.proc.stderr?.on('data', (s: string) => this.keep(s));
    this.proc.on('exit', (code) => {
      this.exited = true;
      this.exitCode = code;
      this.log?.end();
      for (const w of this.exitWaiters.splice(0)) w();
    });
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** The last few KB of stdout and stderr. */
  output(): string {
    return this.tail;
  }

  private keep(s: string): void {
    this.log?.write(s);
    this.tail = (this.tail + s).slice(-4000);
  }

  private onStdout(s: string): void {
    this.keep(s);
    this.buffered += s;
    let nl = this.buffered.indexOf('\n');
    while (nl !== -1) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      let taken = false;
      for (let i = 0; i < this.lineWaiters.length; i++) {
        const w = this.lineWaiters[i]!;
        if (w.test(line)) {
          this.lineWaiters.splice(i, 1);
          w.resolve(line);
          taken = true;
          break;
        }
      }
      if (!taken) {
        this.backlog.push(line);
        if (this.backlog.length > 200) this.backlog.shift();
      }
      nl = this.buffered.indexOf('\n');
    }
  }

  /** Resolves with the first stdout line passing `test` not taken yet; rejects on exit or timeout. */
  waitLine(test: (line: string) => boolean, timeoutMs: number): Promise<string> {
    const early = this.backlog.findIndex(test);
    if (early !== -1) return Promise.resolve(this.backlog.splice(early, 1)[0]!);
    return new Promise((resolve, reject) => {
      if (this.exited) {
        reject(new Error(`${this.name} exited (code ${this.exitCode}):\n${this.tail}`));
        return;
      }
      const timer = setTimeout(() => {
        remove();
        reject(new Error(`${this.name}: no expected output after ${timeoutMs} ms:\n${this.tail}`));
      }, timeoutMs);
      const onExit = (): void => {
        clearTimeout(timer);
        remove();
        reject(new Error(`${this.name} exited (code ${this.exitCode}):\n${this.tail}`));
      };
      const waiter = {
        test,
        resolve: (line: string): void => {
          clearTimeout(timer);
          const i = this.exitWaiters.indexOf(onExit);
          if (i !== -1) this.exitWaiters.splice(i, 1);
          resolve(line);
        },
      };
      const remove = (): void => {
        const i = this.lineWaiters.indexOf(waiter);
        if (i !== -1) this.lineWaiters.splice(i, 1);
      };
      this.lineWaiters.push(waiter);
      this.exitWaiters.push(onExit);
    });
  }

  /** Resolves when the process has exited. */
  waitExit(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it is gone. */
  async stop(graceMs = 3000): Promise<void> {
    if (this.exited) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (!this.exited) this.proc.kill('SIGKILL');
    }, graceMs);
    await this.waitExit();
    clearTimeout(timer);
  }
}

/** Poll `url` until it answers `status`; rejects after `timeoutMs` or when `alive()` turns false. */
export async function waitHttp(url: string, status: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < end) {
    if (!alive()) throw new Error(`process died while waiting for ${url}`);
    try {
      const r = await request(url, { headersTimeout: 1000, bodyTimeout: 1000 });
      const body = await r.body.text();
      if (r.statusCode === status) return;
      last = `${r.statusCode} ${body.slice(0, 300)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})`);
}

/** The path of an executable on PATH or in the sbin directories (nginx lives in /usr/sbin); undefined if absent. */
export function which(cmd: string): string | undefined {
  const path = [process.env.PATH ?? '', '/usr/sbin', '/usr/local/sbin', '/sbin'].join(':');
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8', env: { ...process.env, PATH: path } });
  const p = r.stdout.trim();
  return r.status === 0 && p !== '' ? p : undefined;
}
