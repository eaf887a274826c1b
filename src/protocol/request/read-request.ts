/**
 * Reading a `POST /v1/responses` body (docs/protocol-fidelity.md#how-a-batch-is-read): not UTF-8 is FastAPI's 400;
 * the indexer decides, and parseAgentRequest words the 422 of a body it refuses, or, on the batch path (with
 * maxProblems), validation/bounded-detail.ts does, bounded.
 */
import { isUtf8 } from 'node:buffer';
import { indexedRequest, type IndexedAgentRequest } from './indexed-request.js';
import { parseAgentRequest, readersDisagree } from '../request.js';
import type { IndexReject } from '../json/json-index.js';
import { indexAgentRequest, type IndexLimits, type RequestFindings, type RequestIndex } from './request-index.js';
import type { ValidationIssue } from '../types.js';
import { firstInvalidUtf8 } from '../json/utf8.js';
import { MemoryKeyRepeats } from './protocol-walker.js';

function memoryKeyRepeats(reject: MemoryKeyRepeats): ValidationIssue {
  return {
    type: 'too_long',
    loc: ['body', 'inputs', reject.owner, 'memory'],
    msg: `${reject.reason}: occurrence ${reject.max + 1} is at byte ${reject.at}`,
    input: {},
    ctx: { max_length: reject.max },
  };
}

export type RequestRead =
  | { ok: true; request: IndexedAgentRequest; index: RequestIndex }
  | { ok: false; status: 422; detail: ValidationIssue[] }
  /** The 422 detail left to the caller, with what the indexer saw. */
  | { ok: false; status: 422; detail: undefined; reject: IndexReject; findings: RequestFindings | undefined }
  | { ok: false; status: 400; message: string; offset: number };

export function readAgentRequest(body: Buffer, limits: IndexLimits): RequestRead {
  if (!isUtf8(body)) {
    const offset = firstInvalidUtf8(body);
    return {
      ok: false,
      status: 400,
      offset,
      message: `There was an error parsing the body: it is not valid UTF-8 (byte ${offset})`,
    };
  }
  const indexed = indexAgentRequest(body, limits);
  if (indexed.ok) return { ok: true, request: indexedRequest(indexed.index, limits.memoryKey), index: indexed.index };
  // Python's json keeps the last copy, so the schema's words would accept it: the bound words its own 422.
  if (indexed.reject instanceof MemoryKeyRepeats) return { ok: false, status: 422, detail: [memoryKeyRepeats(indexed.reject)] };
  if (limits.maxProblems !== undefined) return { ok: false, status: 422, detail: undefined, reject: indexed.reject, findings: indexed.findings };
  const parsed = parseAgentRequest(body.toString('utf8'), limits);
  if (!parsed.ok) return { ok: false, status: 422, detail: parsed.detail };
  return { ok: false, status: 422, detail: [readersDisagree(indexed.reject)] };
}
