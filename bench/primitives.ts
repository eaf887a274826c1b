/**
 * Micro-bench of the per-batch primitives the hot path chose between (S1, docs/performance.md#targets):
 * what one batch pays for
 * its cancellation signal, its deadline timer and its replay bookkeeping.
 *
 *   node dist/bench/primitives.js [--n 200000]
 *
 * Prints one line per primitive: µs per operation (the median of 5 runs of n operations, after a warm-up run).
 */
import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BatchSignal } from '../src/abort.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '200000' } } });
const N = Number(values.n);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function bench(name: string, fn: () => unknown): void {
  const runs: number[] = [];
  for (let r = 0; r < 6; r++) {
    const t = performance.now();
    for (let i = 0; i < N; i++) fn();
    if (r > 0) runs.push(((performance.now() - t) * 1000) / N);
  }
  process.stdout.write(`${name.padEnd(58)} ${median(runs).toFixed(3)} µs\n`);
}

const noop = (): void => {};
const body = Buffer.alloc(1200, 0x61);

bench('new AbortController()', () => new AbortController().signal);
bench('AbortController + one add/remove listener pair', () => {
  const ac = new AbortController();
  ac.signal.addEventListener('abort', noop, { once: true });
  ac.signal.removeEventListener('abort', noop);
});
bench('new BatchSignal() + one add/remove listener pair', () => {
  const s = new BatchSignal();
  s.addEventListener('abort', noop);
  s.removeEventListener('abort', noop);
});
bench('setTimeout + clearTimeout (the batch deadline)', () => clearTimeout(setTimeout(noop, 30_000)));
bench('randomUUID()', () => randomUUID());
bench('SHA-256 of a 1.2 KB body, hex (the replay key)', () => createHash('sha256').update(body).digest('hex'));
