/** The 422 detail of a refused AgentRequest, bounded (docs/memory-budget.md#the-bounded-422). */
import { parseExact } from '../protocol/json/exact-json.js';
import type { IndexReject } from '../protocol/json/json-index.js';
import type { RequestRead } from '../protocol/request/read-request.js';
import type { IndexLimits, RequestFindings } from '../protocol/request/request-index.js';
import { findNonFinite, parseAgentRequest, readersDisagree, tooManyOutputs } from '../protocol/request.js';
import { agentInputSchema, agentRequestSchema } from '../protocol/schemas.js';
import type { ValidationIssue } from '../protocol/types.js';
import { boundInput, zodToDetail } from '../protocol/validation-errors.js';

/** Up to this the whole parse costs about what the indexer did. */
const FULL_DETAIL_MAX_BYTES = 64 * 1024;

/** Past this an invalid input is described by its size alone (docs/memory-budget.md#the-bounded-422). */
const ELEMENT_DECODE_MAX_BYTES = 1024 * 1024;

/** maxInputs is server.max_candidates_per_batch. */
export type RequestReadLimits = IndexLimits & { maxProblems: number; maxInputs: number };

function boundDetail(detail: ValidationIssue[], max: number, more = 0): ValidationIssue[] {
  const rest = Math.max(0, detail.length - max) + more;
  if (rest === 0) return detail;
  return [...detail.slice(0, max), restEntry(rest, max)];
}

function restEntry(rest: number, max: number): ValidationIssue {
  return {
    type: 'too_many_errors',
    loc: ['body'],
    msg: `${rest} more problem${rest === 1 ? '' : 's'} not listed (server.max_validation_errors: ${max})`,
    input: rest,
  };
}

function refusedDetail(
  body: Buffer,
  reject: IndexReject,
  findings: RequestFindings | undefined,
  limits: RequestReadLimits,
): ValidationIssue[] {
  const tooMany: ValidationIssue[] = [];
  if (findings !== undefined && findings.tooManyInputs > 0) {
    const msg = `the batch has ${findings.tooManyInputs} inputs, so asks for at least as many candidates; at most ${limits.maxInputs} (server.max_candidates_per_batch)`;
    tooMany.push({ type: 'too_long', loc: ['body', 'inputs'], msg, input: findings.tooManyInputs });
  }
  // Only the inputs before the limit were checked: their problems first (as the schema reports them), then the limit.
  if (tooMany.length > 0 && findings?.badInputCount === 0 && findings.requestIdOk) return tooMany;
  if (body.length <= FULL_DETAIL_MAX_BYTES && tooMany.length === 0) {
    const parsed = parseAgentRequest(body.toString('utf8'), limits);
    if (!parsed.ok) return boundDetail(parsed.detail, limits.maxProblems);
    return [readersDisagree(reject)];
  }
  if (findings === undefined || !findings.structured) return [topLevelProblem(body, reject)];
  const detail: ValidationIssue[] = [];
  if (findings.requestId === undefined) detail.push({ type: 'missing', loc: ['body', 'request_id'], msg: 'Field required', input: '(the request object)' });
  else if (!findings.requestIdOk) detail.push(...requestIdDetail(body, findings.requestId));
  let shown = 0;
  for (const bad of findings.badInputs) {
    if (detail.length >= limits.maxProblems) break;
    detail.push(...inputDetail(body, bad, limits));
    shown++;
  }
  const unlisted = findings.badInputCount - shown;
  if (detail.length === 0) return tooMany.length > 0 ? tooMany : [topLevelProblem(body, reject)];
  return [...boundDetail(detail, limits.maxProblems, unlisted), ...tooMany];
}

/** The code-point position Python's json module names. */
function charPosition(body: Buffer, at: number): number {
  let n = 0;
  for (const byte of body.subarray(0, Math.max(at, 0))) if ((byte & 0xc0) !== 0x80) n++;
  return n;
}

function topLevelProblem(body: Buffer, reject: IndexReject): ValidationIssue {
  if (body.length === 0) return { type: 'missing', loc: ['body'], msg: 'Field required', input: null };
  if (/^unknown field /.test(reject.reason)) {
    return { type: 'extra_forbidden', loc: ['body'], msg: `Extra inputs are not permitted: ${reject.reason} (byte ${reject.at})`, input: {} };
  }
  const pos = charPosition(body, reject.at);
  return { type: 'json_invalid', loc: ['body', pos], msg: 'JSON decode error', input: {}, ctx: { error: `${reject.reason} (char ${pos})` } };
}

function decode(body: Buffer, start: number, end: number, maxJsonDepth: number): { ok: true; value: unknown } | { ok: false } {
  if (end - start > ELEMENT_DECODE_MAX_BYTES) return { ok: false };
  try {
    return { ok: true, value: parseExact(body.toString('utf8', start, end), { maxDepth: maxJsonDepth }).value };
  } catch {
    return { ok: false };
  }
}

function requestIdDetail(body: Buffer, span: { start: number; end: number }): ValidationIssue[] {
  const d = decode(body, span.start, span.end, 64);
  const value = d.ok ? d.value : `(a value of ${span.end - span.start} bytes)`;
  const r = agentRequestSchema.shape.request_id.safeParse(value, { reportInput: true });
  if (r.success) return [];
  return zodToDetail(r.error, value, ['body', 'request_id']);
}

function inputDetail(body: Buffer, bad: { start: number; end: number; index: number }, limits: RequestReadLimits): ValidationIssue[] {
  const loc = ['body', 'inputs', bad.index];
  const d = decode(body, bad.start, bad.end, Math.max(1, limits.maxJsonDepth - 2));
  if (!d.ok) {
    return [{ type: 'value_error', loc, msg: `Value error, an input of ${bad.end - bad.start} bytes that is not a valid AgentInput`, input: {} }];
  }
  const r = agentInputSchema.safeParse(d.value, { reportInput: true });
  if (!r.success) return zodToDetail(r.error, d.value, loc);
  const n = r.data.num_outputs;
  if (typeof n !== 'number' || n > limits.maxOutputsPerInput) return [tooManyOutputs(loc, n, limits.maxOutputsPerInput)];
  // Schema-valid: what is left is a number that overflows to infinity somewhere in it.
  const infinite: ValidationIssue[] = [];
  findNonFinite(d.value, loc, infinite);
  return [{ type: 'finite_number', loc: infinite[0]?.loc ?? loc, msg: 'Input should be a finite number', input: boundInput(d.value) }];
}

/** The reader's own detail, else one built from what the indexer saw. */
export function refusalDetail(body: Buffer, r: Extract<RequestRead, { status: 422 }>, limits: RequestReadLimits): ValidationIssue[] {
  return r.detail ?? refusedDetail(body, r.reject, r.findings, limits);
}
