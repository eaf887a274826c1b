/**
 * The V8 setting the gateway wants for itself, applied by the serve command before it builds the app, so that
 * `node dist/src/cli.js`, `npx magma-gateway`, `npm start`, the image and the manifests all run the same process
 * without flags on node's command line (docs/performance.md#v8-flags).
 *
 * Why a heap growth of 150%: a batch of megabytes lives in Buffers outside a JS heap of a few tens of MB, and V8
 * sizes the next full collection's limit from that small heap and from how fast the last ones ran. Under large
 * batches it chose a limit so close to the live heap that a full collection ran every batch or two. A fixed growth
 * factor bounds that, for some more resident memory between full collections. V8 reads the flag each time it
 * recomputes the heap's limits, so setting it before the first batch has the effect of passing it to node.
 */
import { setFlagsFromString } from 'node:v8';

/** The growth past a full collection's survivors the gateway sets, in percent. */
export const HEAP_GROWING_PERCENT = 150;

/** What is in force: the gateway's own value, or the one the operator gave node on its command line. */
export type HeapGrowth = { source: 'gateway'; percent: number } | { source: 'node-flag'; arg: string };

// V8 takes either spelling; node refuses the flag in NODE_OPTIONS, so its command line is the only other source.
const NAMES = ['--heap-growing-percent', '--heap_growing_percent'];

/** The argument among node's own that sets the heap growth, if any. */
export function heapFlagArg(execArgv: readonly string[]): string | undefined {
  return execArgv.find((a) => NAMES.some((n) => a === n || a.startsWith(`${n}=`)));
}

/** Sets the gateway's heap growth unless the operator passed their own to node; call once, before the first batch. */
export function applyProcessSettings(
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
): HeapGrowth {
  const given = heapFlagArg(execArgv);
  if (given !== undefined) return { source: 'node-flag', arg: given };
  setFlags(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return { source: 'gateway', percent: HEAP_GROWING_PERCENT };
}
