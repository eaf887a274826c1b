/**
 * The V8 heap growth the gateway sets for itself, so every way of starting it runs the same process
 * (docs/performance.md#v8-flags). Why 150%: batches live in Buffers outside a small JS heap, and V8 sized its next
 * full collection so close to that heap that one ran every batch or two. V8 reads the flag at each recompute.
 */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 150;

type HeapGrowth = { source: 'gateway'; percent: number } | { source: 'node-flag'; arg: string };

// V8 takes either spelling; node refuses the flag in NODE_OPTIONS, so its command line is the only other source.
const NAMES = ['--heap-growing-percent', '--heap_growing_percent'];

export function heapFlagArg(execArgv: readonly string[]): string | undefined {
  return execArgv.find((a) => NAMES.some((n) => a === n || a.startsWith(`${n}=`)));
}

/** Unless the operator passed their own to node; once, before the first batch. */
export function applyProcessSettings(
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
): HeapGrowth {
  const given = heapFlagArg(execArgv);
  if (given !== undefined) return { source: 'node-flag', arg: given };
  setFlags(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return { source: 'gateway', percent: HEAP_GROWING_PERCENT };
}
