/**
 * Reads whose time grows with the bytes run on one worker thread (reader/reader-worker.ts,
 * docs/memory-budget.md#yielding): a large batch body's read and a large backend answer's index, so one 60 MB
 * body or 100 MB answer does not stop `/health` and every other batch for the seconds it takes. Bytes up to
 * LARGE_BODY_BYTES (protocol/body-bytes.ts) are read in place: their read takes less than the hand-over would.
 *
 * One worker, started with the first large job and kept (unref'd while idle: never the reason the process stays
 * up); jobs queue in its message port in arrival order. A worker that dies fails the jobs it had, and the next
 * large job starts a new one.
 *
 * Safe by construction: the memory handed over is a store the gateway allocated for that body
 * (protocol/byte-store.ts) or a Buffer it allocated whole for it (protocol/body-bytes.ts), transferred and
 * transferred back, or else a copy. Never a Buffer some library may share.
 */
import { Worker } from 'node:worker_threads';
import { GatewayError } from '../errors.js';
import { isOwn, shrinkStoresWith, storeOf } from '../protocol/byte-store.js';
import { shrinkOffTheLoop } from './shrink-thread.js';
import type { AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
import type { OffloadJob, OffloadOutcome, OffloadReply, OffloadTask, ReadOutcome, RequestLimits } from './reader-worker.js';

shrinkStoresWith(shrinkOffTheLoop);

type Pending = { resolve: (r: OffloadReply) => void; reject: (err: Error) => void };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

/** Jobs of each kind handed to the thread so far, and how many went as a copy rather than their own store (tests read them). */
export const offloaded: Record<OffloadTask['kind'], { jobs: number; copied: number }> = {
  request: { jobs: 0, copied: 0 },
  answer: { jobs: 0, copied: 0 },
};

function theWorker(): Worker {
  if (worker !== undefined) return worker;
  const w = new Worker(new URL('./reader-worker.js', import.meta.url));
  w.unref();
  w.on('message', (reply: OffloadReply) => {
    const p = pending.get(reply.id);
    pending.delete(reply.id);
    p?.resolve(reply);
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

/**
 * `body` and `task` to the worker. A body that is its store whole goes as that store, which is not this thread's
 * until it comes back; any other is copied.
 */
async function offload(body: Buffer, task: OffloadTask): Promise<{ body: Buffer; outcome: OffloadOutcome }> {
  const w = theWorker();
  const id = nextId++;
  const count = offloaded[task.kind];
  count.jobs++;
  const store = storeOf(body);
  const whole = store !== undefined && body.byteOffset === 0 && body.length === store.size;
  let bytes: ArrayBuffer;
  if (whole) bytes = store.handOver();
  else if (isOwn(body) && body.buffer instanceof ArrayBuffer) bytes = body.buffer;
  else {
    count.copied++;
    bytes = new ArrayBuffer(body.length);
    body.copy(new Uint8Array(bytes));
  }
  const reply = await new Promise<OffloadReply>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Kept alive while it has work: a batch waiting for its read must not let the process exit under it.
    w.ref();
    const job: OffloadJob = { id, bytes, length: body.length, task };
    w.postMessage(job, [bytes]);
  }).catch((err: unknown) => {
    // The thread died with the store: it is gone, and so are the views over it.
    if (whole) store.returned(new ArrayBuffer(0));
    throw err;
  });
  const read = Buffer.from(reply.body, reply.offset, reply.length);
  // After the view is made: a store released meanwhile gives its pages back now, and the view is empty.
  if (whole) store.returned(reply.sent ?? reply.body);
  return { body: read, outcome: reply.outcome };
}

function unexpected(kind: string): GatewayError {
  return new GatewayError('GATEWAY_ERR_INTERNAL', `the reader thread answered a ${kind} job for another kind`);
}

/**
 * Read a request `body` on the worker: as UTF-8 (protocol/json/utf8.ts jsonBytesAsUtf8), then indexed. The returned
 * `body` is the UTF-8 bytes read (the same memory when the body was UTF-8).
 */
export async function readOffloaded(body: Buffer, limits: RequestLimits): Promise<{ body: Buffer; outcome: ReadOutcome }> {
  const r = await offload(body, { kind: 'request', limits });
  if (r.outcome.kind !== 'request') throw unexpected('request');
  return { body: r.body, outcome: r.outcome.read };
}

/** Index a backend answer's `bytes` on the worker (protocol/answer/answer-check.ts indexAnswer). */
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
