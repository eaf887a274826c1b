/** A batch's body read and checked before anything is routed (docs/protocol-fidelity.md#how-a-batch-is-read). */
import { mbToBytes, type GatewayConfig } from '../config/schema.js';
import { errorBody } from '../errors.js';
import type { Logger } from '../logging.js';
import { stringifyExact } from '../protocol/json/exact-json.js';
import { readAgentRequest } from '../protocol/request/read-request.js';
import { checkBatchLimits } from '../protocol/request-limits.js';
import { jsonBytesAsUtf8, notDecodedMessage } from '../protocol/json/utf8.js';
import { refusalDetail, type RequestReadLimits } from '../validation/bounded-detail.js';
import { indexedRequest, type IndexedAgentRequest } from '../protocol/request/indexed-request.js';
import type { ValidationIssue } from '../protocol/types.js';
import { OFFLOAD_BYTES, readOffloaded } from '../reader/reader.js';

export interface ReadBody {
  request: IndexedAgentRequest;
  raw: Buffer;
  rawHash?: string;
}

type BatchRead = ({ ok: true } & ReadBody) | { ok: false; status: 200 | 400 | 422; body: string };

/** Only a long id is measured exactly; a short one is counted at its worst (6 bytes a character, `\u0000`). */
function jsonStringBytes(value: string): number {
  return value.length <= 64 ? 0 : Buffer.byteLength(JSON.stringify(value));
}

function limitsOf(server: GatewayConfig['server'], memoryKey: string): RequestReadLimits {
  return {
    maxOutputsPerInput: server.max_outputs_per_input,
    maxJsonDepth: server.max_json_depth,
    memoryKey,
    maxInputs: server.max_candidates_per_batch,
    maxProblems: server.max_validation_errors,
    maxMemoryKeyRepeats: server.max_memory_key_repeats,
  };
}

export function readBatch(body: Buffer, server: GatewayConfig['server'], memoryKey: string, log: Logger): BatchRead {
  // A UTF-16 or UTF-32 body is read (and forwarded) as the UTF-8 it decodes to, as FastAPI's json.loads reads it.
  const bytes = jsonBytesAsUtf8(body);
  if (!bytes.ok) return notUtf8(notDecodedMessage(bytes.encoding, bytes.offset), bytes.offset, log);
  const raw = bytes.buf;
  const limits = limitsOf(server, memoryKey);
  const parsed = readAgentRequest(raw, limits);
  if (parsed.ok) return checked(parsed.request, raw, server, log);
  if (parsed.status === 400) return notUtf8(parsed.message, parsed.offset, log);
  return invalid(refusalDetail(raw, parsed, limits), log);
}

/**
 * A large body is read on the reader thread, hashed for replay there too: 60 MB held the event loop for tens of
 * ms. `received` must not be used after this: the bytes read are `raw`.
 */
export async function readBatchYielding(
  received: Buffer,
  server: GatewayConfig['server'],
  memoryKey: string,
  log: Logger,
): Promise<BatchRead> {
  if (received.length <= OFFLOAD_BYTES) return readBatch(received, server, memoryKey, log);
  const { outcome, body } = await readOffloaded(received, limitsOf(server, memoryKey));
  if (outcome.ok) return checked(indexedRequest(Object.assign({}, outcome.index, { buf: body }), memoryKey), body, server, log, outcome.hash);
  return outcome.status === 400 ? notUtf8(outcome.message, outcome.offset, log) : invalid(outcome.detail, log);
}

function notUtf8(message: string, offset: number, log: Logger): BatchRead {
  log.info({ code: 'GATEWAY_ERR_BODY_ENCODING', offset }, 'request body is not UTF-8');
  return { ok: false, status: 400, body: JSON.stringify(errorBody('GATEWAY_ERR_BODY_ENCODING', message)) };
}

function invalid(detail: ValidationIssue[], log: Logger): BatchRead {
  log.info({ code: 'GATEWAY_ERR_INVALID_REQUEST', problems: detail.length, first: detail[0]?.loc }, 'invalid AgentRequest');
  return { ok: false, status: 422, body: stringifyExact({ detail }) };
}

function checked(request: IndexedAgentRequest, raw: Buffer, server: GatewayConfig['server'], log: Logger, rawHash?: string): BatchRead {
  if (request.inputs.length === 0) return { ok: false, status: 200, body: '[]' };
  const { inputs } = request;
  // Every memory is a slice of the body: its size is its length, and all of them together fit in the body.
  // An id is one too, written as it came (answer-bytes.ts idBytes).
  const idSpanBytes = (i: number): number => {
    const span = inputs[i]?.raw.index.idSpan;
    return span === undefined ? 0 : span.end - span.start;
  };
  const tooBig = checkBatchLimits(inputs, (i) => inputs[i]?.raw.memory.byteLength ?? 0, {
    maxCandidates: server.max_candidates_per_batch,
    maxAnswerBytes: mbToBytes(server.max_answer_mb),
    maxAnswerMb: server.max_answer_mb,
    requestIdBytes: jsonStringBytes(request.request_id),
    idBytes: idSpanBytes,
  }, raw.length);
  if (tooBig.length > 0) {
    log.info({ code: 'GATEWAY_ERR_INVALID_REQUEST', inputs: inputs.length, problem: tooBig[0]?.msg }, 'batch over its limits');
    return { ok: false, status: 422, body: stringifyExact({ detail: tooBig }) };
  }
  return { ok: true, request, raw, rawHash };
}
