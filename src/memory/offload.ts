/**
 * Reads whose time grows with the bytes run on one worker thread (memory/offload-worker.ts,
 * docs/memory-budget.md#yielding): a large batch body's read and a large backend answer's index, so one 60 MB
 * body or 100 MB answer does not stop `/health` and every other batch for the seconds it takes. Bytes up to
 * LARGE_BODY_BYTES (protocol/body-bytes.ts) are read in place: their read takes less than the hand-over would.
 *
 * One worker, started with the first large job and kept (unref'd while idle: never the reason the process stays
 * up); jobs queue in its message port in arrival order. A worker that dies fails the jobs it had, and the next
 * large job starts a new one.
 *
 * A body or answer that came without a length (chunked) is handed over as the chunks it arrived in and joined
 * there: the join of 50 MB is a copy (and 50 MB of fresh pages) that held the event loop for 70 to 170 ms per
 * body under load (docs/memory-budget.md#yielding), and the chunks are then freed by the thread's own collector.
 */
import { Worker } from 'node:worker_threads';
import { GatewayError } from '../errors.js';
import type { ReceivedBody } from '../protocol/body-bytes.js';
import type { AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
import type { OffloadJob, OffloadOutcome, OffloadReply, OffloadTask, ReadOutcome, RequestLimits } from './offload-worker.js';

type Pending = { resolve: (r: { body: Buffer; outcome: OffloadOutcome }) => void; reject: (err: Error) => void };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

/**
 * Jobs of each kind handed to the thread so far, the pieces their bytes came in, and how many of those were
 * copied rather than handed over (tests read them: what ran where, and that the chunks were not copied here).
 */
export const offloaded: Record<OffloadTask['kind'], { jobs: number; pieces: number; copied: number }> = {
  request: { jobs: 0, pieces: 0, copied: 0 },
  answer: { jobs: 0, pieces: 0, copied: 0 },
};

function theWorker(): Worker {
  if (worker !== undefined) return worker;
  const w = new Worker(new URL('./offload-worker.js', import.meta.url));
  w.unref();
  w.on('message', (reply: OffloadReply) => {
    const p = pending.get(reply.id);
    pending.delete(reply.id);
    p?.resolve({ body: Buffer.from(reply.body, reply.offset, reply.length), outcome: reply.outcome });
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

function copied(buf: Buffer): ArrayBuffer {
  const copy = new ArrayBuffer(buf.length);
  buf.copy(new Uint8Array(copy));
  return copy;
}

/**
 * The stores to hand over for `pieces`: a piece whose ArrayBuffer it alone spans goes as that ArrayBuffer (a
 * socket's chunks do, and a body received into one Buffer of its declared length); any other, or a store
 * already listed, is copied. An empty piece is never handed over: an empty store is often one its maker shares
 * (undici keeps one empty Buffer for every connection, and handing it over broke them all).
 */
function ownStores(pieces: readonly Buffer[], count: { copied: number }): ArrayBuffer[] {
  const seen = new Set<ArrayBufferLike>();
  return pieces.map((p) => {
    const own = p.byteLength > 0 && p.byteOffset === 0 && p.byteLength === p.buffer.byteLength && p.buffer instanceof ArrayBuffer && !seen.has(p.buffer);
    seen.add(p.buffer);
    if (own && p.buffer instanceof ArrayBuffer) return p.buffer;
    count.copied++;
    return copied(p);
  });
}

/** `body` and `task` to the worker; the Buffers given are unusable afterwards (their bytes come back as `body`). */
function offload(body: ReceivedBody, task: OffloadTask): Promise<{ body: Buffer; outcome: OffloadOutcome }> {
  const w = theWorker();
  const id = nextId++;
  const pieces = Buffer.isBuffer(body) ? [body] : body;
  const count = offloaded[task.kind];
  const stores = ownStores(pieces, count);
  count.jobs++;
  count.pieces += stores.length;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Kept alive while it has work: a batch waiting for its read must not let the process exit under it.
    w.ref();
    const job: OffloadJob = { id, pieces: stores, task };
    try {
      w.postMessage(job, stores);
    } catch {
      // A store node will not hand over (a pooled one): copies go instead.
      const copies = pieces.map(copied);
      w.postMessage({ ...job, pieces: copies }, copies);
    }
  });
}

function unexpected(kind: string): GatewayError {
  return new GatewayError('GATEWAY_ERR_INTERNAL', `the reader thread answered a ${kind} job for another kind`);
}

/**
 * Read a request `body` on the worker: joined there when it came in pieces, then as UTF-8 (protocol/json/utf8.ts
 * jsonBytesAsUtf8), then indexed. The Buffers given are unusable afterwards; the returned `body` is the UTF-8
 * bytes read (the same memory when the body was one UTF-8 Buffer).
 */
export async function readOffloaded(body: ReceivedBody, limits: RequestLimits): Promise<{ body: Buffer; outcome: ReadOutcome }> {
  const r = await offload(body, { kind: 'request', limits });
  if (r.outcome.kind !== 'request') throw unexpected('request');
  return { body: r.body, outcome: r.outcome.read };
}

/** Index a backend answer's `bytes` on the worker (protocol/answer/answer-check.ts indexAnswer); same hand-over as above. */
export async function indexAnswerOffloaded(
  bytes: ReceivedBody,
  asked: number,
  maxDepth: number,
  memoryKey: string,
): Promise<{ body: Buffer; outcome: AnswerIndexOutcome }> {
  const r = await offload(bytes, { kind: 'answer', asked, maxDepth, memoryKey });
  if (r.outcome.kind !== 'answer') throw unexpected('answer');
  return { body: r.body, outcome: r.outcome.index };
}
