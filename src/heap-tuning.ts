/**
 * `server.heap_growing_percent` (docs/gateway-behaviour.md, "Batches die young"): how far V8 lets the old
 * generation grow past what survived the last full GC before it starts the next one.
 *
 * Why the gateway sets it: a batch of megabytes lives in Buffers outside a JS heap of a few tens of MB, and V8
 * sizes the next full GC's limit from that small heap and from how fast the last ones ran. Under S2 traffic it
 * chose a limit so close to the live heap that a full GC ran every batch or two, about half of the gateway's CPU
 * per batch. A fixed growth factor bounds that, for some more resident memory between full GCs.
 *
 * The flag is one V8 reads at every full GC, so it takes effect when set at start. An operator who passes
 * `--heap-growing-percent=N` on node's command line keeps theirs (node refuses it in NODE_OPTIONS).
 */
import { setFlagsFromString } from 'node:v8';

/** What is in force: the config's value, node's own flag, or V8's default (the config said 0). */
export type HeapGrowth = { source: 'config'; percent: number } | { source: 'node-flag' } | { source: 'v8-default' };

const NAMES = ['--heap-growing-percent', '--heap_growing_percent'];

/** Whether one of node's arguments sets the flag. */
export function heapFlagGiven(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => NAMES.some((n) => a === n || a.startsWith(`${n}=`)));
}

/** Applies `percent` unless node was started with the flag; 0 leaves V8's own heuristic. */
export function applyHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): HeapGrowth {
  if (heapFlagGiven(execArgv)) return { source: 'node-flag' };
  if (percent === 0) return { source: 'v8-default' };
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  return { source: 'config', percent };
}
