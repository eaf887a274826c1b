/**
 * The reader thread (memory/offload.ts, docs/memory-budget.md#yielding): the reads whose time grows with the
 * bytes -- a large batch body's join (when it came in chunks), decoding (a UTF-16 or UTF-32 body), UTF-8 check,
 * byte index and, for a refused body, its bounded 422 detail; a large backend answer's UTF-8 check and byte
 * index -- off the event loop that serves every other client. The bytes come in as transferred ArrayBuffers and
 * the bytes read go back the same way (copied only to join chunks or to decode); what comes back besides is plain
 * data, offsets into those bytes (a few objects per input or candidate: the indexers build none per element of
 * a memory, and none past the bound of inputs or candidates).
 */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { indexAnswer, type AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
import { jsonBytesAsUtf8, notDecodedMessage } from '../protocol/json/utf8.js';
import { readAgentRequest } from '../protocol/request/read-request.js';
import type { RequestIndex } from '../protocol/request/request-index.js';
import type { ValidationIssue } from '../protocol/types.js';
import { refusalDetail, type RequestReadLimits } from '../validation/bounded-detail.js';

export type RequestLimits = RequestReadLimits;

/** What the thread is asked: read a request body, or index a backend's answer for `asked` candidates. */
export type OffloadTask =
  | { kind: 'request'; limits: RequestLimits }
  | { kind: 'answer'; asked: number; maxDepth: number; memoryKey: string };

export interface OffloadJob {
  id: number;
  /** The body's bytes in order, each store whole (one for a body received as one Buffer). */
  pieces: ArrayBuffer[];
  task: OffloadTask;
}

export type ReadOutcome =
  | { ok: true; index: Omit<RequestIndex, 'buf'> }
  | { ok: false; status: 400; message: string; offset: number }
  | { ok: false; status: 422; detail: ValidationIssue[] };

/** The outcome of each task kind, tagged as the task is. */
export type OffloadOutcome = { kind: 'request'; read: ReadOutcome } | { kind: 'answer'; index: AnswerIndexOutcome };

/** The bytes read are `length` bytes of `body` from `offset` (a byte order mark is skipped without a copy). */
export interface OffloadReply {
  id: number;
  body: ArrayBuffer;
  offset: number;
  length: number;
  outcome: OffloadOutcome;
}

/** The read of one request body, as the thread does it (exported so it is tested without a thread). */
export function readJob(buf: Buffer, limits: RequestLimits): ReadOutcome {
  const r = readAgentRequest(buf, limits);
  if (r.ok) {
    const { requestId, requestIdSpan, inputs, repeatedKeys } = r.index;
    return { ok: true, index: { requestId, requestIdSpan, inputs, repeatedKeys } };
  }
  if (r.status === 400) return { ok: false, status: 400, message: r.message, offset: r.offset };
  return { ok: false, status: 422, detail: refusalDetail(buf, r, limits) };
}

/** The job's pieces as one Buffer: the one piece itself, or the pieces copied into a Buffer of their total. */
function joined(pieces: readonly ArrayBuffer[]): Buffer {
  const [only] = pieces;
  if (pieces.length === 1 && only !== undefined) return Buffer.from(only);
  let size = 0;
  for (const p of pieces) size += p.byteLength;
  // Never from node's pool: the result is handed back whole.
  const out = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const p of pieces) {
    out.set(new Uint8Array(p), at);
    at += p.byteLength;
  }
  return out;
}

/** One job, either kind: the outcome and the bytes it read. */
export function runJob(job: OffloadJob): { outcome: OffloadOutcome; body: Buffer } {
  const received = joined(job.pieces);
  const task = job.task;
  if (task.kind === 'answer') return { outcome: { kind: 'answer', index: indexAnswer(received, task.asked, task.maxDepth, task.memoryKey) }, body: received };
  // A UTF-16 or UTF-32 body is read (and forwarded) as the UTF-8 it decodes to, as FastAPI's json.loads reads it.
  const bytes = jsonBytesAsUtf8(received);
  if (!bytes.ok) {
    const read: ReadOutcome = { ok: false, status: 400, message: notDecodedMessage(bytes.encoding, bytes.offset), offset: bytes.offset };
    return { outcome: { kind: 'request', read }, body: received };
  }
  return { outcome: { kind: 'request', read: readJob(bytes.buf, task.limits) }, body: bytes.buf };
}

/** The store to hand `body` back in: its own, or (a small decoded body from node's pool) a copy. */
function handBack(body: Buffer): { store: ArrayBuffer; offset: number } {
  const store = body.buffer;
  if (store instanceof ArrayBuffer && store.byteLength >= body.byteOffset + body.length && body.length > Buffer.poolSize / 2) return { store, offset: body.byteOffset };
  const copy = new ArrayBuffer(body.length);
  body.copy(new Uint8Array(copy));
  return { store: copy, offset: 0 };
}

/**
 * The thread's CPU share below the event loop's. Under a burst of large answers every core is busy (sockets, the
 * collector, this thread), and a thread of equal weight took CPU from the event loop when it had a /health to
 * answer; at nice 10 it gets what the event loop leaves. Linux only: there a nice value is a thread's own,
 * elsewhere it would be the whole process's.
 */
const READER_NICE = 10;
if (parentPort !== null && process.platform === 'linux') {
  try {
    setPriority(READER_NICE);
  } catch {
    // Refused here (a sandbox's seccomp policy): the thread keeps the event loop's priority.
  }
}

/**
 * The collector, when node was started with --expose-gc (memory/reclaim.ts): the stores of a joined body are
 * freed as soon as the join is done rather than when this small heap next fills, so a body is held twice for
 * one job, not until the collector comes round.
 */
const collect: unknown = globalThis.gc;

parentPort?.on('message', (job: OffloadJob) => {
  const { outcome, body } = runJob(job);
  const { store, offset } = handBack(body);
  const reply: OffloadReply = { id: job.id, body: store, offset, length: body.length, outcome };
  parentPort?.postMessage(reply, [store]);
  // On a later turn: the job (and its pieces) is unreachable by then.
  if (job.pieces.length > 1 && typeof collect === 'function') setImmediate(() => collect());
});
