/**
 * A large body's read and a large answer's index on one worker thread (docs/memory-budget.md#yielding). What is
 * handed over is memory the gateway allocated for that body, or else a copy: never a Buffer a library may share.
 */
import { Worker } from 'node:worker_threads';
import { GatewayError } from '../errors.js';
import { EXACT_JSON_THREAD_DATA } from '../protocol/json/exact-json.js';
import { isOwn, shrinkStoresWith, storeOf } from '../protocol/byte-store.js';
import { askedOf, indexAnswer, placeAnswer, type AnswerCheck, type AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
import type { SubRequestShape } from '../protocol/answer/response-check.js';
import { DEFAULT_MAX_MEMORY_KEY_REPEATS } from '../protocol/request/protocol-walker.js';
import type { RequestReadLimits } from '../validation/bounded-detail.js';
import type { OffloadJob, OffloadOutcome, OffloadReply, OffloadTask, ReadOutcome } from './reader-worker.js';

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

/**
 * A released store's pages go back to the system on a thread of its own: `resize(0)` costs about 17 ms per 50 MB
 * (Node 20), so ten 50 MB batches ending together held /health past 100 ms; the hand-over costs 0.1 ms. Not the
 * reader thread: the pages would stay resident behind a 60 MB index there.
 */
function shrinkOffTheLoop(ab: ArrayBuffer): void {
  try {
    theThread().postMessage(ab, [ab]);
  } catch {
    ab.resize(0);
  }
}

shrinkStoresWith(shrinkOffTheLoop);

/** A body or answer over this is read on the thread; a smaller one costs less CPU in place (docs/memory-budget.md#yielding). */
export const OFFLOAD_BYTES = 8 * 1024 * 1024;

type Pending = { resolve: (r: OffloadReply) => void; reject: (err: Error) => void };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

/** Tests read them. */
export const offloaded: Record<OffloadTask['kind'], { jobs: number; copied: number }> = {
  request: { jobs: 0, copied: 0 },
  answer: { jobs: 0, copied: 0 },
};

function theWorker(): Worker {
  if (worker !== undefined) return worker;
  const w = new Worker(new URL('./reader-worker.js', import.meta.url), { workerData: EXACT_JSON_THREAD_DATA });
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

/** A body that is its store whole goes as that store, not this thread's until it comes back. */
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

/** The returned `body` is the UTF-8 bytes read (the same memory when the body was UTF-8). */
export async function readOffloaded(
  body: Buffer,
  limits: RequestReadLimits,
): Promise<{ body: Buffer; outcome: ReadOutcome }> {
  const r = await offload(body, { kind: 'request', limits });
  if (r.outcome.kind !== 'request') throw unexpected('request');
  return { body: r.body, outcome: r.outcome.read };
}

export async function indexAnswerOffloaded(
  bytes: Buffer,
  asked: number,
  maxDepth: number,
  memoryKey: string,
  maxKeyRepeats = DEFAULT_MAX_MEMORY_KEY_REPEATS,
): Promise<{ body: Buffer; outcome: AnswerIndexOutcome }> {
  const r = await offload(bytes, { kind: 'answer', asked, maxDepth, memoryKey, maxKeyRepeats });
  if (r.outcome.kind !== 'answer') throw unexpected('answer');
  return { body: r.body, outcome: r.outcome.index };
}

/**
 * Indexed without holding the event loop for its size: a large answer on the thread, a small one in place (at once,
 * before the first await). `bytes` is unusable afterwards when large: its memory went to the thread and came back as
 * the returned `body`.
 */
export async function indexAnswerYielding(
  bytes: Buffer,
  asked: number,
  maxDepth: number,
  memoryKey: string,
  maxKeyRepeats: number,
): Promise<{ body: Buffer; outcome: AnswerIndexOutcome }> {
  if (bytes.length <= OFFLOAD_BYTES) return { body: bytes, outcome: indexAnswer(bytes, asked, maxDepth, memoryKey, maxKeyRepeats) };
  return indexAnswerOffloaded(bytes, asked, maxDepth, memoryKey, maxKeyRepeats);
}

/** A backend's whole answer checked as indexAnswerYielding reads it. */
export async function checkAnswerYielding(
  bytes: Buffer,
  shape: SubRequestShape,
  maxDepth: number,
  memoryKey: string,
  maxKeyRepeats: number,
): Promise<AnswerCheck> {
  const { body, outcome } = await indexAnswerYielding(bytes, askedOf(shape), maxDepth, memoryKey, maxKeyRepeats);
  return placeAnswer(body, outcome, shape, maxDepth);
}
