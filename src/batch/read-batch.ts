/**
 * The first step of a batch (README "What happens to a batch"): its body read by the byte indexer
 * (docs/gateway-behaviour.md, "How a batch is read"), so memory stays the client's bytes, and checked against
 * the batch limits before anything is routed. A body that is not UTF-8 is a 400, a request the contract or the
 * limits refuse a 422 with FastAPI's detail; an empty batch is answered `[]` at once.
 */
import { mbToBytes, type GatewayConfig } from '../config/schema.js';
import { errorBody } from '../errors.js';
import type { Logger } from '../logging.js';
import { stringifyExact } from '../protocol/exact-json.js';
import { readAgentRequest } from '../protocol/read-request.js';
import { checkBatchLimits } from '../protocol/request-limits.js';
import type { IndexedAgentRequest } from '../protocol/indexed-request.js';

/** The request to route, or the answer that ends the batch here. */
export type BatchRead =
  | { ok: true; request: IndexedAgentRequest }
  | { ok: false; status: 200 | 400 | 422; body: string };

export function readBatch(raw: Buffer, server: GatewayConfig['server'], memoryKey: string, log: Logger): BatchRead {
  const parsed = readAgentRequest(raw, {
    maxOutputsPerInput: server.max_outputs_per_input,
    maxJsonDepth: server.max_json_depth,
    memoryKey,
  });
  if (!parsed.ok && parsed.status === 400) {
    log.info({ code: 'GATEWAY_ERR_BODY_ENCODING', offset: parsed.offset }, 'request body is not UTF-8');
    return { ok: false, status: 400, body: JSON.stringify(errorBody('GATEWAY_ERR_BODY_ENCODING', parsed.message)) };
  }
  if (!parsed.ok) {
    log.info({ code: 'GATEWAY_ERR_INVALID_REQUEST', problems: parsed.detail.length, first: parsed.detail[0]?.loc }, 'invalid AgentRequest');
    return { ok: false, status: 422, body: stringifyExact({ detail: parsed.detail }) };
  }
  const { request } = parsed;
  if (request.inputs.length === 0) return { ok: false, status: 200, body: '[]' };
  const { inputs } = request;
  // Every memory is a slice of the body: its size is its length, and all of them together fit in the body.
  const tooBig = checkBatchLimits(inputs, (i) => inputs[i]!.raw.memory.byteLength, { // checkBatchLimits only calls back with indexes of inputs
    maxCandidates: server.max_candidates_per_batch,
    maxAnswerBytes: mbToBytes(server.max_answer_mb),
    maxAnswerMb: server.max_answer_mb,
  }, raw.length);
  if (tooBig.length > 0) {
    log.info({ code: 'GATEWAY_ERR_INVALID_REQUEST', inputs: inputs.length, problem: tooBig[0]?.msg }, 'batch over its limits');
    return { ok: false, status: 422, body: stringifyExact({ detail: tooBig }) };
  }
  return { ok: true, request };
}
