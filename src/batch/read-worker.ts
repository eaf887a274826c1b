/**
 * The worker thread that reads large batch bodies (batch/read-offload.ts, docs/memory-budget.md "Yielding"):
 * the UTF-8 check, the byte indexer and, for a refused body, its bounded 422 detail, off the event loop that
 * serves every other client. The body comes in as a transferred ArrayBuffer and goes back the same way, never
 * copied; what comes back besides is the index without its buffer (a few objects per input: the indexer
 * builds none per element of a memory, and none past server.max_candidates_per_batch inputs).
 */
import { parentPort } from 'node:worker_threads';
import { readAgentRequest } from '../protocol/read-request.js';
import type { IndexLimits, RequestIndex } from '../protocol/request-index.js';
import type { ValidationIssue } from '../protocol/types.js';
import { refusedDetail } from '../validation/bounded-detail.js';

export interface ReadJob {
  id: number;
  body: ArrayBuffer;
  length: number;
  limits: IndexLimits & { maxProblems: number; maxInputs: number };
}

export type ReadOutcome =
  | { ok: true; index: Omit<RequestIndex, 'buf'> }
  | { ok: false; status: 400; message: string; offset: number }
  | { ok: false; status: 422; detail: ValidationIssue[] };

export interface ReadReply {
  id: number;
  body: ArrayBuffer;
  outcome: ReadOutcome;
}

/** The read of one body, as the worker does it (exported so it is tested without a thread). */
export function readJob(job: ReadJob): ReadOutcome {
  const buf = Buffer.from(job.body, 0, job.length);
  const r = readAgentRequest(buf, job.limits);
  if (r.ok) {
    const { requestId, requestIdSpan, inputs, repeatedKeys } = r.index;
    return { ok: true, index: { requestId, requestIdSpan, inputs, repeatedKeys } };
  }
  if (r.status === 400) return { ok: false, status: 400, message: r.message, offset: r.offset };
  const detail =
    r.detail ??
    refusedDetail(buf, r.reject, r.findings, {
      maxOutputsPerInput: job.limits.maxOutputsPerInput,
      maxJsonDepth: job.limits.maxJsonDepth,
      maxProblems: job.limits.maxProblems,
      maxCandidates: job.limits.maxInputs,
    });
  return { ok: false, status: 422, detail };
}

parentPort?.on('message', (job: ReadJob) => {
  const outcome = readJob(job);
  const reply: ReadReply = { id: job.id, body: job.body, outcome };
  parentPort?.postMessage(reply, [job.body]);
});
