/** The checks that never reach the agent's model, judged as BENCH does (docs/protocol-fidelity.md#strictness). */
import { agentInfoSchema, isJsonObject } from '../protocol/schemas.js';
import { excerpt, exchange, hasDetail, parseBodyExact, require2xx, requestId, type CheckResult, type ProbeTarget } from './check-http.js';
import { GatewayError } from '../errors.js';

export const HEALTH = 'health';
export const INFO = 'info strict';
/** Only listed when the field is present: older cores send it, BENCH's strict model rejects it. */
const INFO_LEGACY = 'info no coaching_session_version';

export function issuesText(issues: readonly { path: PropertyKey[]; message: string }[], max = 4): string {
  const parts = issues.slice(0, max).map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
  if (issues.length > max) parts.push(`… ${issues.length - max} more`);
  return parts.join('; ');
}

/** 2xx and exactly `{"status":"ready"}`: BENCH does not accept the contract's default-filled `{}`. */
export async function checkHealth(t: ProbeTarget): Promise<string> {
  const ex = await exchange(t, 'GET', '/health');
  require2xx(ex, 'GET /health');
  const body = parseBodyExact(ex, 'the /health body');
  const exact = isJsonObject(body) && Object.keys(body).length === 1 && body.status === 'ready';
  if (!exact) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `expected exactly {"status":"ready"}, got ${excerpt(ex.text)}`);
  return `HTTP ${ex.status} {"status":"ready"}`;
}

/** Plus a note row when the agent sends `coaching_session_version` (which also fails the strict row). */
export async function checkInfo(t: ProbeTarget): Promise<CheckResult[]> {
  const ex = await exchange(t, 'GET', '/v1/info');
  require2xx(ex, 'GET /v1/info');
  const body = parseBodyExact(ex, 'the /v1/info body');
  if (!isJsonObject(body)) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `expected a JSON object, got ${excerpt(ex.text)}`);

  const problems: string[] = [];
  let summary = '';
  const parsed = agentInfoSchema.safeParse(body);
  if (!parsed.success) problems.push(issuesText(parsed.error.issues));
  else {
    const d = parsed.data;
    // Defaults applied: a missing protocol_version means "2.0" to a pydantic consumer too.
    if (d.protocol_version !== '2.0') problems.push(`protocol_version is "${d.protocol_version}", consumers require "2.0"`);
    if (d.capabilities.inference !== true) problems.push('capabilities.inference must be true');
    const caps = Object.entries(d.capabilities).map(([k, v]) => `${k}=${v}`);
    summary = `${d.agent_id} ${d.agent_version}, protocol ${d.protocol_version}, ${caps.join(' ')}`;
  }
  const rows: CheckResult[] = [
    problems.length > 0 ? { name: INFO, ok: false, detail: problems.join('; ') } : { name: INFO, ok: true, detail: summary },
  ];
  if ('coaching_session_version' in body) {
    rows.push({
      name: INFO_LEGACY,
      ok: false,
      detail: 'carries coaching_session_version (older core); BENCH rejects unknown /v1/info fields',
    });
  }
  return rows;
}

/** Raw text: `1.0` cannot be built otherwise. */
function invalidBody(tag: string, edit: (valid: string) => string): string {
  return edit(`{"request_id":"${requestId(tag)}","inputs":[{"id":1,"instruction":{"type":"user","content":"Conformance probe."},"num_outputs":1}]}`);
}

/** Invalid bodies that FastAPI/pydantic strict models reject with 422 (docs/protocol-fidelity.md#strictness). */
export const INVALID_BODIES: { name: string; body: () => string }[] = [
  { name: '422 id 1.0', body: () => invalidBody('id-float', (s) => s.replace('"id":1,', '"id":1.0,')) },
  { name: '422 num_outputs 0', body: () => invalidBody('n0', (s) => s.replace('"num_outputs":1', '"num_outputs":0')) },
  { name: '422 unknown field', body: () => invalidBody('extra', (s) => `${s.slice(0, -1)},"unexpected_field":true}`) },
  {
    name: '422 instruction.type system',
    body: () => invalidBody('system', (s) => s.replace('"type":"user"', '"type":"system"')),
  },
  { name: '422 missing request_id', body: () => invalidBody('no-rid', (s) => s.replace(/"request_id":"[^"]*",/, '')) },
  { name: '422 body not JSON', body: () => invalidBody('not-json', (s) => s.slice(0, 40)) },
];

/** Any 2xx means the agent accepted garbage. */
export async function checkInvalid(t: ProbeTarget, body: string): Promise<string> {
  const ex = await exchange(t, 'POST', '/v1/responses', body);
  if (ex.status === 422) {
    if (!hasDetail(ex.text)) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `HTTP 422 without a JSON "detail": ${excerpt(ex.text)}`);
    return 'HTTP 422 with detail';
  }
  if (ex.status >= 200 && ex.status < 300) throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `HTTP ${ex.status}: accepted an invalid body`);
  throw new GatewayError('GATEWAY_ERR_CHECK_FAILED', `HTTP ${ex.status} instead of 422: ${excerpt(ex.text)}`);
}
