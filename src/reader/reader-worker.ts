/** The reader thread (docs/memory-budget.md#yielding): the bytes come and go as a transferred ArrayBuffer. */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { hashBody } from '../protocol/body-hash.js';
import { indexAnswer, type AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
import { jsonBytesAsUtf8, notDecodedMessage } from '../protocol/json/utf8.js';
import { readAgentRequest } from '../protocol/request/read-request.js';
import type { RequestIndex } from '../protocol/request/request-index.js';
import type { ValidationIssue } from '../protocol/types.js';
import { refusalDetail, type RequestReadLimits } from '../validation/bounded-detail.js';

export type OffloadTask =
  | { kind: 'request'; limits: RequestReadLimits }
  | { kind: 'answer'; asked: number; maxDepth: number; memoryKey: string; maxKeyRepeats: number };

export interface OffloadJob {
  id: number;
  bytes: ArrayBuffer;
  length: number;
  task: OffloadTask;
}

export type ReadOutcome =
  | { ok: true; index: Omit<RequestIndex, 'buf'>; hash: string }
  | { ok: false; status: 400; message: string; offset: number }
  | { ok: false; status: 422; detail: ValidationIssue[] };

export type OffloadOutcome = { kind: 'request'; read: ReadOutcome } | { kind: 'answer'; index: AnswerIndexOutcome };

/** The bytes read are `length` bytes of `body` from `offset` (a byte order mark is skipped without a copy). */
export interface OffloadReply {
  id: number;
  body: ArrayBuffer;
  offset: number;
  length: number;
  outcome: OffloadOutcome;
  sent?: ArrayBuffer;
}

function readJob(buf: Buffer, limits: RequestReadLimits): ReadOutcome {
  const r = readAgentRequest(buf, limits);
  if (r.ok) {
    const { requestId, requestIdSpan, inputs, repeatedKeys } = r.index;
    return { ok: true, index: { requestId, requestIdSpan, inputs, repeatedKeys }, hash: hashBody(buf) };
  }
  if (r.status === 400) return { ok: false, status: 400, message: r.message, offset: r.offset };
  return { ok: false, status: 422, detail: refusalDetail(buf, r, limits) };
}

function runJob(job: OffloadJob): { outcome: OffloadOutcome; body: Buffer } {
  const received = Buffer.from(job.bytes, 0, job.length);
  const task = job.task;
  if (task.kind === 'answer') return { outcome: { kind: 'answer', index: indexAnswer(received, task.asked, task.maxDepth, task.memoryKey, task.maxKeyRepeats) }, body: received };
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

/** A thread of equal weight took CPU from the event loop's /health. Linux only: elsewhere nice is the process's. */
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
  // The job's memory always goes back, even when the body read is a decoded copy.
  const own = store === job.bytes;
  const reply: OffloadReply = { id: job.id, body: store, offset, length: body.length, outcome, ...(own ? {} : { sent: job.bytes }) };
  parentPort?.postMessage(reply, own ? [store] : [store, job.bytes]);
});
