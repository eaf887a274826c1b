/**
 * A released store's pages go back to the system on a thread of its own: `resize(0)` costs about 17 ms per 50 MB
 * (Node 20), so ten 50 MB batches ending together held /health past 100 ms; the hand-over costs 0.1 ms. Not the
 * reader thread: the pages would stay resident behind a 60 MB index there.
 */
import { Worker } from 'node:worker_threads';

/** At nice 10 on Linux, as the reader thread: the pages can wait, the event loop cannot. */
const SOURCE = `
if (process.platform === 'linux') try { require('node:os').setPriority(10); } catch {}
require('node:worker_threads').parentPort.on('message', (ab) => ab.resize(0));
`;

let thread: Worker | undefined;

function theThread(): Worker {
  if (thread !== undefined) return thread;
  const t = new Worker(SOURCE, { eval: true });
  t.unref();
  t.on('error', () => undefined);
  t.on('exit', () => {
    if (thread === t) thread = undefined;
  });
  thread = t;
  return t;
}

export function shrinkOffTheLoop(ab: ArrayBuffer): void {
  try {
    theThread().postMessage(ab, [ab]);
  } catch {
    ab.resize(0);
  }
}
