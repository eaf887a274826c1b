/**
 * Where a released store's pages go back to the system (protocol/byte-store.ts): a thread of its own. `resize(0)`
 * costs about 17 ms per 50 MB on the thread that calls it (Node 20, this machine), so ten 50 MB batches ending
 * together held the event loop past /health's 100 ms; handing the memory over costs 0.1 ms. Not the reader
 * thread: a 60 MB index there takes a second, and the pages would stay resident behind it.
 *
 * The transfer empties every view of the memory here at once, as a shrink would. A thread that cannot take it
 * leaves the shrink to this one. Started with the first release, unref'd: never the reason the process stays up.
 */
import { Worker } from 'node:worker_threads';

/**
 * At nice 10 on Linux, as the reader thread (reader-worker.ts): the pages can wait, the event loop cannot. Refused in a
 * sandbox, the thread keeps the loop's priority.
 */
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
