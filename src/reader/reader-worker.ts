/**
 * The reader thread (reader/reader.ts, docs/memory-budget.md#yielding): the reads whose time grows with the
 * bytes -- decoding (a UTF-16 or UTF-32 body), UTF-8 check,
 * byte index and, for a refused body, its bounded 422 detail; a large backend answer's UTF-8 check and byte
 * index -- off the event loop that serves every other client. The bytes come in as a transferred ArrayBuffer and
 * go back the same way (copied only to decode); what comes back besides is plain
 * data, offsets into those bytes (a few objects per input or candidate: the indexers build none per element of
 * a memory, and none past the bound of inputs or candidates).
 */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { hashBody } from '../protocol/body-hash.js';
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
  /** The body's bytes: the first `length` of this memory. */
  bytes: ArrayBuffer;
  length: number;
  task: OffloadTask;
}

export type ReadOutcome =
  /** `hash`: the replay store's hash of the bytes read (protocol/body-hash.ts), made here, off the event loop. */
  | { ok: true; index: Omit<RequestIndex, 'buf'>; hash: string }
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
  /** The memory the job came in, when the bytes read are elsewhere (a decoded body). */
  sent?: ArrayBuffer;
}

/** The read of one request body, as the thread does it (exported so it is tested without a thread). */
export function readJob(buf: Buffer, limits: RequestLimits): ReadOutcome {
  const r = readAgentRequest(buf, limits);
  if (r.ok) {
    const { requestId, requestIdSpan, inputs, repeatedKeys } = r.index;
    return { ok: true, index: { requestId, requestIdSpan, inputs, repeatedKeys }, hash: hashBody(buf) };
  }
  if (r.status === 400) return { ok: false, status: 400, message: r.message, offset: r.offset };
  return { ok: false, status: 422, detail: refusalDetail(buf, r, limits) };
}

/** One job, either kind: the outcome and the bytes it read. */
export function runJob(job: OffloadJob): { outcome: OffloadOutcome; body: Buffer } {
  const received = Buffer.from(job.bytes, 0, job.length);
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

/** The memory to hand `body` back in: the job's own, a decoded body's own, or (a small one from node's pool) a copy. */
function handBack(job: OffloadJob, body: Buffer): { store: ArrayBuffer; offset: number } {
  const store = body.buffer;
  if (store === job.bytes) return { store, offset: body.byteOffset };
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

parentPort?.on('message', (job: OffloadJob) => {
  const { outcome, body } = runJob(job);
  const { store, offset } = handBack(job, body);
  // The job's memory always goes back (its store's owner gives it back), even when the body read is a decoded copy.
  const own = store === job.bytes;
  const reply: OffloadReply = { id: job.id, body: store, offset, length: body.length, outcome, ...(own ? {} : { sent: job.bytes }) };
  parentPort?.postMessage(reply, own ? [store] : [store, job.bytes]);
});
