/**
 * The micro-benchmarks' one timing loop (bench/json-index.ts, bench/answer-index.ts): warm up, then run `fn`
 * at least 10 times and for at least `minMs`, and print the median wall time, the CPU time per call (all
 * threads, GC included) and the throughput over `bytes`.
 */
import { performance } from 'node:perf_hooks';
import { median } from './stats.js';

const MB = 1024 * 1024;

export class MicroBench {
  /** Results are folded in here so no call can be optimised away. */
  private sink = 0;

  constructor(
    private readonly minMs: number,
    /** Width of the name column. */
    private readonly nameWidth: number,
  ) {}

  measure(name: string, bytes: number, fn: () => unknown): void {
    const warmEnd = performance.now() + Math.min(300, this.minMs / 2);
    for (let i = 0; i < 3 || performance.now() < warmEnd; i++) fn();
    const times: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    while (times.length < 10 || performance.now() - t0 < this.minMs) {
      const a = performance.now();
      const v = fn();
      times.push(performance.now() - a);
      this.sink += v === undefined ? 0 : 1;
    }
    const cpu = process.cpuUsage(cpu0);
    const ms = median(times);
    const cpuMs = (cpu.user + cpu.system) / 1000 / times.length;
    process.stdout.write(
      `${name.padEnd(this.nameWidth)} ${ms.toFixed(3).padStart(8)} ms ${cpuMs.toFixed(3).padStart(8)} cpu ms ${(bytes / MB / (ms / 1000)).toFixed(0).padStart(6)} MB/s\n`,
    );
  }

  /** Calls made (read at the end so the sink stays live). */
  get calls(): number {
    return this.sink;
  }
}
