/**
 * Contract helpers shared by the demo agents and the test fake agent: request validation with FastAPI-style
 * issues, exact JSON body reading/writing over node:http.
 *
 * Kept free of the gateway's own validation code on purpose: these servers stand in for *other teams'* agents,
 * so a bug in the gateway's validator must not be mirrored here and hidden by the integration tests.
 * Only the lossless codec (exact-json) and the plain protocol types are shared, because without the codec a JS
 * server cannot round-trip `12345678901234567890` in memory at all.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isStrictInt, jsonNumberText, parseExact, stringifyExact } from '../../src/protocol/json/exact-json.js';
import type {
  AgentInput,
  AgentOutput,
  AgentRequest,
  JsonObject,
  ValidationIssue,
} from '../../src/protocol/types.js';

/** Loc path of a FastAPI issue: always starts at "body" for request bodies. */
type Loc = (string | number)[];

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function issue(type: string, loc: Loc, msg: string, input: unknown): ValidationIssue {
  return { type, loc, msg, input };
}

/**
 * The largest num_outputs these servers accept. A strict positive integer is valid per the contract, but a
 * test server must not try to build a billion candidates because a test sent one; the reference agents also
 * have agent-specific 422s.
 */
export const MAX_OUTPUTS = 10_000;

const REQUEST_KEYS = new Set(['request_id', 'inputs']);
const INPUT_KEYS = new Set(['id', 'instruction', 'tools', 'attributes', 'memory', 'num_outputs', 'extra_keys']);
const INSTRUCTION_KEYS = new Set(['type', 'content']);

function checkExtra(obj: JsonObject, allowed: Set<string>, loc: Loc, out: ValidationIssue[]): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.has(k)) out.push(issue('extra_forbidden', [...loc, k], 'Extra inputs are not permitted', obj[k]));
  }
}

function checkObject(v: unknown, loc: Loc, out: ValidationIssue[]): v is JsonObject {
  if (isJsonObject(v)) return true;
  out.push(issue('dict_type', loc, 'Input should be a valid dictionary', v));
  return false;
}

function validateInput(raw: unknown, loc: Loc, out: ValidationIssue[]): AgentInput | undefined {
  if (!checkObject(raw, loc, out)) return undefined;
  const before = out.length;
  checkExtra(raw, INPUT_KEYS, loc, out);

  if (!('id' in raw)) out.push(issue('missing', [...loc, 'id'], 'Field required', raw));
  else if (!isStrictInt(raw.id)) out.push(issue('int_type', [...loc, 'id'], 'Input should be a valid integer', raw.id));

  const ins = raw.instruction;
  if (!('instruction' in raw)) out.push(issue('missing', [...loc, 'instruction'], 'Field required', raw));
  else if (checkObject(ins, [...loc, 'instruction'], out)) {
    checkExtra(ins, INSTRUCTION_KEYS, [...loc, 'instruction'], out);
    if (!('type' in ins)) out.push(issue('missing', [...loc, 'instruction', 'type'], 'Field required', ins));
    else if (ins.type !== 'user' && ins.type !== 'env') {
      out.push(issue('literal_error', [...loc, 'instruction', 'type'], "Input should be 'user' or 'env'", ins.type));
    }
    if (!('content' in ins)) out.push(issue('missing', [...loc, 'instruction', 'content'], 'Field required', ins));
    else if (typeof ins.content !== 'string') {
      out.push(issue('string_type', [...loc, 'instruction', 'content'], 'Input should be a valid string', ins.content));
    }
  }

  const tools = raw.tools ?? [];
  if (!Array.isArray(tools)) out.push(issue('list_type', [...loc, 'tools'], 'Input should be a valid list', tools));
  else tools.forEach((t, i) => checkObject(t, [...loc, 'tools', i], out));
  for (const k of ['attributes', 'memory', 'extra_keys'] as const) {
    if (k in raw) checkObject(raw[k], [...loc, k], out);
  }

  const n = raw.num_outputs ?? 1;
  if (!isStrictInt(n)) out.push(issue('int_type', [...loc, 'num_outputs'], 'Input should be a valid integer', n));
  else if (Number(jsonNumberText(n)) <= 0) {
    out.push(issue('greater_than', [...loc, 'num_outputs'], 'Input should be greater than 0', n));
  } else if (typeof n !== 'number' || n > MAX_OUTPUTS) {
    // Agent-specific limit (see MAX_OUTPUTS); big-integer markers land here too.
    out.push(issue('less_than_equal', [...loc, 'num_outputs'], `Input should be less than or equal to ${MAX_OUTPUTS}`, n));
  }

  if (out.length > before) return undefined;
  return {
    id: raw.id as AgentInput['id'],
    instruction: ins as AgentInput['instruction'],
    tools: tools as JsonObject[],
    attributes: (raw.attributes ?? {}) as JsonObject,
    memory: (raw.memory ?? {}) as JsonObject,
    num_outputs: n as number,
    extra_keys: (raw.extra_keys ?? {}) as JsonObject,
  };
}

/** Validate a parsed body as an AgentRequest, as strictly as the reference pydantic models. */
export function validateAgentRequest(
  body: unknown,
): { ok: true; request: AgentRequest } | { ok: false; issues: ValidationIssue[] } {
  const out: ValidationIssue[] = [];
  if (!checkObject(body, ['body'], out)) return { ok: false, issues: out };
  checkExtra(body, REQUEST_KEYS, ['body'], out);
  if (!('request_id' in body)) out.push(issue('missing', ['body', 'request_id'], 'Field required', body));
  else if (typeof body.request_id !== 'string') {
    out.push(issue('string_type', ['body', 'request_id'], 'Input should be a valid string', body.request_id));
  } else if (body.request_id.length === 0) {
    out.push(issue('string_too_short', ['body', 'request_id'], 'String should have at least 1 character', ''));
  }
  const inputs: AgentInput[] = [];
  if (!('inputs' in body)) out.push(issue('missing', ['body', 'inputs'], 'Field required', body));
  else if (!Array.isArray(body.inputs)) {
    out.push(issue('list_type', ['body', 'inputs'], 'Input should be a valid list', body.inputs));
  } else {
    body.inputs.forEach((raw: unknown, i: number) => {
      const v = validateInput(raw, ['body', 'inputs', i], out);
      if (v) inputs.push(v);
    });
  }
  if (out.length === 0) {
    // Unique ids: compare normalized decimal text so a big integer and its exact twin collide.
    const seen = new Set<string>();
    inputs.forEach((inp, i) => {
      const key = idText(inp.id);
      if (seen.has(key)) {
        out.push(issue('value_error', ['body', 'inputs', i, 'id'], `Value error, duplicate input id ${key}`, inp.id));
      }
      seen.add(key);
    });
  }
  if (out.length > 0) return { ok: false, issues: out };
  return { ok: true, request: { request_id: body.request_id as string, inputs } };
}

/** Decimal text of an input id, whether a JS number or a big-integer marker. */
export function idText(id: unknown): string {
  const t = jsonNumberText(id);
  if (t === undefined) return String(id);
  return /^-?\d+$/.test(t) ? BigInt(t).toString() : t;
}

/** Error raised while reading a body: carries the HTTP status to answer with. */
export class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Read a whole request body as UTF-8 text, refusing more than `limitBytes` (413). */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limitBytes) {
        reject(new BodyError(413, 'Request Entity Too Large'));
        // Stop buffering but keep draining so the 413 can still be written on this connection.
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Parse a request body exactly. Returns the FastAPI-style issues for bad JSON or non-finite numbers, which the
 * reference servers answer with 422 before any model validation.
 */
export function parseBody(text: string): { ok: true; value: unknown } | { ok: false; issues: ValidationIssue[] } {
  try {
    const p = parseExact(text);
    if (p.nonFinite) {
      return { ok: false, issues: [issue('finite_number', ['body'], 'Input should be a finite number', null)] };
    }
    return { ok: true, value: p.value };
  } catch (err) {
    const pos = typeof err === 'object' && err !== null && 'position' in err ? Number(err.position) : 0;
    return { ok: false, issues: [issue('json_invalid', ['body', pos], 'JSON decode error', {})] };
  }
}

/** Write a JSON answer; stringifyExact turns big-integer markers back into their digits. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = stringifyExact(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** FastAPI's shape for validation failures. */
export function send422(res: ServerResponse, issues: ValidationIssue[]): void {
  sendJson(res, 422, { detail: issues });
}

/** Build the (source_id, candidate_index) skeleton of a correct answer, in contract order. */
export function candidateSlots(request: AgentRequest): { input: AgentInput; index: number }[] {
  const out: { input: AgentInput; index: number }[] = [];
  for (const input of request.inputs) {
    for (let c = 0; c < input.num_outputs; c++) out.push({ input, index: c });
  }
  return out;
}

export type { AgentOutput };

/** Listen on host:port (0: the OS picks) and resolve with the port actually bound. */
export async function listenOn(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
