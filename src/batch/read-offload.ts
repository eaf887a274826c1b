/**
 * Large batch bodies are read on a worker thread (batch/read-worker.ts, docs/memory-budget.md "Yielding"), so
 * one client's 60 MB body does not stop `/health` and every other batch for the seconds its indexing takes.
 * Bodies up to OFFLOAD_MIN_BYTES are read in place: their read takes less than the hand-over would.
 *
 * One worker, started with the first large body and kept (unref'd: never the reason the process stays up);
 * jobs queue in its message port in arrival order. A worker that dies fails the jobs it had, and the next
 * large body starts a new one.
 */
import { Worker } from 'node:worker_threads';
import { GatewayError } from '../errors.js';
import type { IndexLimits, RequestIndex } from '../protocol/request-index.js';
import type { ReadJob, ReadOutcome, ReadReply } from './read-worker.js';

/** Bodies larger than this are read on the worker thread. */
export const OFFLOAD_MIN_BYTES = 1024 * 1024;

type Pending = { resolve: (r: { body: Buffer; outcome: ReadOutcome }) => void; reject: (err: Error) => void };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

function theWorker(): Worker {
  if (worker !== undefined) return worker;
  const w = new Worker(new URL('./read-worker.js', import.meta.url));
  w.unref();
  w.on('message', (reply: ReadReply) => {
    const p = pending.get(reply.id);
    pending.delete(reply.id);
    p?.resolve({ body: Buffer.from(reply.body), outcome: reply.outcome });
    if (pending.size === 0) w.unref();
  });
  const fail = (err: Error): void => {
    if (worker === w) worker = undefined;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  w.on('error', fail);
  w.on('exit', (code) => fail(new GatewayError('GATEWAY_ERR_INTERNAL', `the body reader thread exited (${code})`)));
  worker = w;
  return w;
}

/** A Buffer whose ArrayBuffer it alone spans can be handed over; any other is copied into one first. */
function ownStore(buf: Buffer): ArrayBuffer {
  if (buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength && buf.buffer instanceof ArrayBuffer) return buf.buffer;
  const copy = new ArrayBuffer(buf.length);
  buf.copy(new Uint8Array(copy));
  return copy;
}

/**
 * Read `body` on the worker. The Buffer given is unusable afterwards (its memory went to the worker and came
 * back as the returned `body`, the same bytes).
 */
export function readOffloaded(
  body: Buffer,
  limits: IndexLimits & { maxProblems: number; maxInputs: number },
): Promise<{ body: Buffer; outcome: ReadOutcome; index?: RequestIndex }> {
  const w = theWorker();
  const id = nextId++;
  const store = ownStore(body);
  return new Promise((resolve, reject) => {
    pending.set(id, {
      resolve: (r) => resolve(r.outcome.ok ? { ...r, index: { ...r.outcome.index, buf: r.body } } : r),
      reject,
    });
    // Kept alive while it has work: a batch waiting for its read must not let the process exit under it.
    w.ref();
    const job: ReadJob = { id, body: store, length: body.length, limits };
    try {
      w.postMessage(job, [store]);
    } catch {
      // A store node will not hand over (a pooled one): a copy goes instead.
      const copy = new ArrayBuffer(body.length);
      body.copy(new Uint8Array(copy));
      w.postMessage({ ...job, body: copy }, [copy]);
    }
  });
}
