/** Shared pieces of the response cache's tests: BENCH-like inputs, a gateway config with the cache on, reads. */
import type { FakeAgent } from '../helpers/fake-agent.js';
import type { TestGateway } from '../helpers/gateway.js';
import { http } from '../helpers/config-file.js';

let rid = 0;
/** A fresh request_id per batch, as BENCH draws one. */
export function freshRequestId(): string {
  rid += 1;
  return `rid-${process.pid}-${rid}-${Math.random().toString(16).slice(2)}`;
}

/** One BENCH slot's input: a first user instruction, then env feedback carrying the memory it was answered. */
export function slotInput(slot: number, step: number, memory: Record<string, unknown> | undefined, inferenceMode = true): { instruction: { type: string; content: string } } & Record<string, unknown> {
  return {
    id: slot,
    instruction: step === 0
      ? { type: 'user', content: `clean the kitchen, slot ${slot}` }
      : { type: 'env', content: `{"infos": "robot: step ${step} of slot ${slot} succeed with message: ok"}` },
    tools: [{ name: 'pick', parameters: {} }],
    attributes: { scenario: 'kitchen' },
    memory: memory ?? {},
    num_outputs: 1,
    extra_keys: { inference_mode: inferenceMode },
  };
}

/** The inputs the backend was sent, over every /v1/responses request it received (by instruction content). */
export function seenInputs(agent: FakeAgent): string[] {
  return agent.requestsTo('/v1/responses').flatMap((r) => ((r.body as { inputs: { instruction: { content: string } }[] }).inputs).map((i) => i.instruction.content));
}

/** A gateway config with the response cache on, routes caching deterministic inputs. */
export function cachedConfig(backends: Record<string, FakeAgent>, route: Record<string, unknown>, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    backends: Object.fromEntries(Object.entries(backends).map(([n, a]) => [n, { url: a.url }])),
    routes: [{ name: 'main', cache: 'deterministic', ...route }],
    cache: { max_mb: 64, ttl_s: 3600 },
    ...over,
  };
}

/** POST a batch; the answer's text, status and cache header. */
export async function postBatch(gw: TestGateway, inputs: object[], requestId = freshRequestId()): Promise<{ status: number; text: string; json: unknown; hits: string | null; requestId: string }> {
  const res = await gw.post({ request_id: requestId, inputs });
  return { status: res.status, text: res.text, json: res.json, hits: res.headers.get('x-gateway-cache-hits'), requestId };
}

/** The value of one series of the gateway's /metrics (0 when absent). */
export async function metricValue(gw: TestGateway, name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await http(`${gw.url}/metrics`, { method: 'GET' });
  let total = 0;
  for (const line of res.text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
