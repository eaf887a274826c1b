/**
 * The reader thread (memory/offload.ts, docs/memory-budget.md#yielding): the reads whose time grows with the
 * bytes -- a large batch body's UTF-8 check, byte index and, for a refused body, its bounded 422 detail; a large
 * backend answer's UTF-8 check and byte index -- off the event loop that serves every other client. The bytes
 * come in as a transferred ArrayBuffer and go back the same way, never copied; what comes back besides is plain
 * data, offsets into those bytes (a few objects per input or candidate: the indexers build none per element of
 * a memory, and none past the bound of inputs or candidates).
 */
import { parentPort } from 'node:worker_threads';
import { indexAnswer, type AnswerIndexOutcome } from '../protocol/answer/answer-check.js';
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
  body: ArrayBuffer;
  length: number;
  task: OffloadTask;
}

export type ReadOutcome =
  | { ok: true; index: Omit<RequestIndex, 'buf'> }
  | { ok: false; status: 400; message: string; offset: number }
  | { ok: false; status: 422; detail: ValidationIssue[] };

/** The outcome of each task kind, tagged as the task is. */
export type OffloadOutcome = { kind: 'request'; read: ReadOutcome } | { kind: 'answer'; index: AnswerIndexOutcome };

export interface OffloadReply {
  id: number;
  body: ArrayBuffer;
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

/** One job, either kind. */
export function runJob(job: OffloadJob): OffloadOutcome {
  const buf = Buffer.from(job.body, 0, job.length);
  const task = job.task;
  if (task.kind === 'request') return { kind: 'request', read: readJob(buf, task.limits) };
  return { kind: 'answer', index: indexAnswer(buf, task.asked, task.maxDepth, task.memoryKey) };
}

parentPort?.on('message', (job: OffloadJob) => {
  const reply: OffloadReply = { id: job.id, body: job.body, outcome: runJob(job) };
  parentPort?.postMessage(reply, [job.body]);
});
