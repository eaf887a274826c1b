/**
 * Reads whose time grows with the bytes run on one worker thread (memory/offload-worker.ts,
 * docs/memory-budget.md#yielding): a large batch body's read and a large backend answer's index, so one 60 MB
 * body or 100 MB answer does not stop `/health` and every other batch for the seconds it takes. Bytes up to
 * OFFLOAD_MIN_BYTES are read in place: their read takes less than the hand-over would.
 *
 * One worker, started with the first large job and kept (unref'd while idle: never the reason the process stays
 * up); jobs queue in its message port in arrival order. A worker that dies fails the jobs it had, and the next
 * large job starts a new one.
 */
import { Worker } from 'node:worker_threads';
import { GatewayError } from '../errors.js';
import type { AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
import type { OffloadJob, OffloadOutcome, OffloadReply, OffloadTask, ReadOutcome, RequestLimits } from './offload-worker.js';

/** Bytes larger than this are read on the worker thread. */
export const OFFLOAD_MIN_BYTES = 1024 * 1024;

type Pending = { resolve: (r: { body: Buffer; outcome: OffloadOutcome }) => void; reject: (err: Error) => void };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

function theWorker(): Worker {
  if (worker !== undefined) return worker;
  const w = new Worker(new URL('./offload-worker.js', import.meta.url));
  w.unref();
  w.on('message', (reply: OffloadReply) => {
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
  w.on('exit', (code) => fail(new GatewayError('GATEWAY_ERR_INTERNAL', `the reader thread exited (${code})`)));
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

/** `body` and `task` to the worker; the Buffer given is unusable afterwards (its memory comes back as `body`). */
function offload(body: Buffer, task: OffloadTask): Promise<{ body: Buffer; outcome: OffloadOutcome }> {
  const w = theWorker();
  const id = nextId++;
  const store = ownStore(body);
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Kept alive while it has work: a batch waiting for its read must not let the process exit under it.
    w.ref();
    const job: OffloadJob = { id, body: store, length: body.length, task };
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

function unexpected(kind: string): GatewayError {
  return new GatewayError('GATEWAY_ERR_INTERNAL', `the reader thread answered a ${kind} job for another kind`);
}

/**
 * Read a request `body` on the worker. The Buffer given is unusable afterwards (its memory went to the worker
 * and came back as the returned `body`, the same bytes).
 */
export async function readOffloaded(body: Buffer, limits: RequestLimits): Promise<{ body: Buffer; outcome: ReadOutcome }> {
  const r = await offload(body, { kind: 'request', limits });
  if (r.outcome.kind !== 'request') throw unexpected('request');
  return { body: r.body, outcome: r.outcome.read };
}

/** Index a backend answer's `bytes` on the worker (protocol/answer/answer-check.ts indexAnswer); same hand-over as above. */
export async function indexAnswerOffloaded(
  bytes: Buffer,
  asked: number,
  maxDepth: number,
  memoryKey: string,
): Promise<{ body: Buffer; outcome: AnswerIndexOutcome }> {
  const r = await offload(bytes, { kind: 'answer', asked, maxDepth, memoryKey });
  if (r.outcome.kind !== 'answer') throw unexpected('answer');
  return { body: r.body, outcome: r.outcome.index };
}
