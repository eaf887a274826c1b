/**
 * Reading a `POST /v1/responses` body (docs/protocol-fidelity.md#how-a-batch-is-read): the body must be
 * UTF-8 (else 400, as FastAPI answers a body it cannot decode), then the indexer validates and indexes it in
 * one pass (request-index.ts) and the request is built over its bytes (indexed-request.ts). A body the indexer
 * refuses goes through parseAgentRequest (request.ts), whose FastAPI-style 422 detail says why: the indexer
 * only decides, so every message stays what it was. On the batch path (limits with maxProblems) the detail is
 * built bounded by the caller instead (validation/bounded-detail.ts), from what the indexer saw.
 */
import { isUtf8 } from 'node:buffer';
import { indexedRequest, type IndexedAgentRequest } from './indexed-request.js';
import { parseAgentRequest } from '../request.js';
import type { IndexReject } from '../json/json-index.js';
import { indexAgentRequest, type IndexLimits, type RequestFindings, type RequestIndex } from './request-index.js';
import type { ValidationIssue } from '../types.js';
import { firstInvalidUtf8 } from '../json/utf8.js';

export type RequestRead =
  | { ok: true; request: IndexedAgentRequest; index: RequestIndex }
  | { ok: false; status: 422; detail: ValidationIssue[] }
  /** Refused by the indexer, the 422 detail left to the caller (validation/bounded-detail.ts): what it saw. */
  | { ok: false; status: 422; detail: undefined; reject: IndexReject; findings: RequestFindings | undefined }
  /** Not UTF-8: FastAPI's 400 "There was an error parsing the body", with the offset of the first bad byte. */
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
  // With a bound on problems (the batch path) the detail is the caller's to build, bounded.
  if (limits.maxProblems !== undefined) return { ok: false, status: 422, detail: undefined, reject: indexed.reject, findings: indexed.findings };
  const parsed = parseAgentRequest(body.toString('utf8'), limits);
  if (!parsed.ok) return { ok: false, status: 422, detail: parsed.detail };
  // The two readers disagree: the indexer's reason is the answer (the differential test keeps this unreached).
  const { reason, at } = indexed.reject;
  return {
    ok: false,
    status: 422,
    detail: [{ type: 'value_error', loc: ['body'], msg: `Value error, ${reason} (byte ${at})`, input: {} }],
  };
}
