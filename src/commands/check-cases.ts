/** The `POST /v1/responses` checks of `magma-gateway check`, written and read with the exact codec. */
import { intKey, jsonNumberText, numberMark, stringifyExact } from '../protocol/json/exact-json.js';
import { validateAgainstRequest } from '../protocol/answer/response-check.js';
import { agentOutputSchema, isJsonObject } from '../protocol/schemas.js';
import type { AgentInput, AgentOutput, AgentRequest, IntValue, JsonObject } from '../protocol/types.js';
import {
  excerpt, exchange, parseBodyExact, require2xx, requestId, type Exchange, type ProbeTarget,
} from './check-http.js';
import { issuesText } from './check-probes.js';
import { GatewayError } from '../errors.js';

const BIG_ID = '99999999999999999999';
/** Every number here is one JS would rewrite. */
const MEMORY_EXPECT: [path: string[], text: string][] = [
  [['big'], '12345678901234567890'],
  [['f'], '1.0'],
  [['nested', 'neg'], '-99999999999999999999'],
];

function input(id: IntValue, numOutputs: number, memory: JsonObject = {}): AgentInput {
  return {
    id,
    instruction: { type: 'user', content: 'Conformance probe: say hello.' },
    tools: [],
    attributes: {},
    memory,
    num_outputs: numOutputs,
    // BENCH always sends it; deterministic decoding keeps a model-backed agent's probe cheap and stable.
    extra_keys: { inference_mode: true },
  };
}

function post(t: ProbeTarget, request: AgentRequest): Promise<Exchange> {
  return exchange(t, 'POST', '/v1/responses', stringifyExact(request));
}

function candidates(ex: Exchange): AgentOutput[] {
  require2xx(ex, 'POST /v1/responses');
  const body = parseBodyExact(ex, 'the answer');
  if (!Array.isArray(body)) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `the answer is not a JSON array of AgentOutput: ${excerpt(ex.text)}`);
  const out: AgentOutput[] = [];
  const bad: string[] = [];
  body.forEach((raw: unknown, i) => {
    const p = agentOutputSchema.safeParse(raw);
    if (p.success) out.push(p.data);
    else bad.push(`candidate [${i}] ${issuesText(p.error.issues, 2)}`);
  });
  if (bad.length > 0) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', bad.slice(0, 3).join(' | '));
  return out;
}

/** Error candidates are valid in their slot (contract), but a probe answered with errors deserves a mention. */
function errorNote(outs: AgentOutput[]): string {
  const errs = outs.filter((o) => o.status === 'error');
  if (errs.length === 0) return '';
  const codes = [...new Set(errs.map((o) => o.error?.code ?? '?'))].join(', ');
  return `; note: ${errs.length} of ${outs.length} candidates are error candidates (${codes})`;
}

function pairs(outs: AgentOutput[]): string {
  return outs.map((o) => `(${intKey(o.source_id)},${intKey(o.candidate_index)})`).join(' ');
}

function ordered(request: AgentRequest, ex: Exchange): AgentOutput[] {
  const outs = candidates(ex);
  const problem = validateAgainstRequest(request, outs);
  if (problem !== undefined) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `${problem}; got ${pairs(outs) || 'no candidates'}`);
  return outs;
}

/** The contract's own example: ids 7 and 3 asking 2 and 1 candidates → (7,0) (7,1) (3,0). */
export async function checkOrdering(t: ProbeTarget): Promise<string> {
  const request: AgentRequest = { request_id: requestId('order'), inputs: [input(7, 2), input(3, 1)] };
  const outs = ordered(request, await post(t, request));
  return `${pairs(outs)}${errorNote(outs)}`;
}

const BIG_SOURCE_RE = new RegExp(`"source_id"\\s*:\\s*${BIG_ID}(?![\\d.eE])`);

/** A BENCH/GEN-like batch with a negative id and an id beyond 2^64. */
export async function checkBatch(t: ProbeTarget): Promise<string> {
  const request: AgentRequest = {
    request_id: requestId('batch'),
    inputs: [input(11, 1), input(-5, 3), input(numberMark(BIG_ID), 1), input(4, 2)],
  };
  const ex = await post(t, request);
  // The raw text is the evidence: a JS agent using JSON.parse writes 100000000000000000000 back.
  const verbatim = BIG_SOURCE_RE.test(ex.text);
  let outs: AgentOutput[];
  try {
    outs = ordered(request, ex);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (ex.status >= 200 && ex.status < 300 && !verbatim) {
      throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `${why}; source_id ${BIG_ID} is not in the raw body verbatim (precision lost?)`, {
        cause: err,
      });
    }
    throw err;
  }
  if (!verbatim) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `source_id ${BIG_ID} is not in the raw body verbatim`);
  return `${outs.length} candidates in order, ids -5 and ${BIG_ID} echoed exactly${errorNote(outs)}`;
}

export async function checkEmpty(t: ProbeTarget): Promise<string> {
  const ex = await post(t, { request_id: requestId('empty'), inputs: [] });
  require2xx(ex, 'POST /v1/responses');
  const body = parseBodyExact(ex, 'the answer');
  if (!Array.isArray(body) || body.length !== 0) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `expected [], got ${excerpt(ex.text)}`);
  return `HTTP ${ex.status} []`;
}

function at(obj: unknown, path: string[]): unknown {
  let v = obj;
  for (const k of path) v = isJsonObject(v) ? v[k] : undefined;
  return v;
}

/** Every candidate, error candidates included, must return complete memory: numbers as written, rules kept. */
export async function checkMemory(t: ProbeTarget): Promise<string> {
  const memory: JsonObject = {
    big: numberMark('12345678901234567890'),
    f: numberMark('1.0'),
    nested: { neg: numberMark('-99999999999999999999') },
    memory_list: ['rule'],
  };
  const request: AgentRequest = { request_id: requestId('memory'), inputs: [input(1, 2, memory)] };
  const outs = candidates(await post(t, request));
  if (outs.length !== 2) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `asked 2 candidates, got ${outs.length}`);
  const problems: string[] = [];
  for (const o of outs) {
    const who = `candidate (${intKey(o.source_id)},${intKey(o.candidate_index)})`;
    for (const [path, want] of MEMORY_EXPECT) {
      const got = at(o.memory, path);
      const text = jsonNumberText(got) ?? (got === undefined ? 'missing' : JSON.stringify(got));
      if (text !== want) problems.push(`${who} memory.${path.join('.')}: sent ${want}, got ${text}`);
    }
    const rules = o.memory.memory_list;
    if (!Array.isArray(rules) || !rules.includes('rule')) problems.push(`${who} lost memory.memory_list ["rule"]`);
  }
  if (problems.length > 0) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', problems.slice(0, 4).join('; '));
  return `2 candidates kept big, f=1.0, nested.neg and memory_list exactly${errorNote(outs)}`;
}
