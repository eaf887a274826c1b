/**
 * The client's answer written from bytes (src/dispatch/answer-bytes.ts, docs/protocol-fidelity.md#how-a-batch-is-read):
 * a backend's memory, internal_steps and output reach the client as the backend wrote them, the tag
 * inserted; source_id is the client's own text; error candidates carry their input's memory bytes; an answer
 * of many candidates, larger than socket buffers, is written whole on both fronts.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { oneBackend } from '../helpers/fixtures.js';
import { injectBatch } from '../helpers/inject.js';

const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

interface SubRequest {
  request_id: string;
  inputs: { id: number; num_outputs?: number }[];
}

/** A backend on loopback that answers the text `answer` builds from the sub-request (parsed) and its raw text. */
async function rawBackend(answer: (req: SubRequest, raw: string) => string): Promise<string> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const body =
        req.url === '/v1/responses'
          ? answer(JSON.parse(raw) as SubRequest, raw)
          : req.url === '/v1/info'
            ? '{"protocol_version":"2.0","agent_id":"raw","agent_version":"1","capabilities":{"inference":true}}'
            : '{"status":"ready"}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`; // a TCP listener's address is an AddressInfo
}

async function gateway(config: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway(config);
  cleanup.push(() => gw.close());
  return gw;
}

const TAG_A = '"_gateway":{"backend":"a","route":"default"}';
/** What a backend writes that JS would not print back the same: key order, numbers, escapes, whitespace. */
const MEMORY = '{"b":1, "10":[1.0,-0,12345678901234567890],"2":"\\u00e9\\ud800"}';
const STEPS = '[{"k": 1e5, "2": 0.10}]';
const OUTPUT = '{"tool_calls":[],"say":"h\\u00e9"}';

const candidate = (sourceId: string, index: number, memory = MEMORY): string =>
  `{"candidate_index":${index},"source_id":${sourceId},"request_id":"r","status":"completed","memory":${memory},"internal_steps":${STEPS},"output":${OUTPUT}}`;

test("a backend's memory, internal_steps and output reach the client as the backend wrote them, the tag inserted", async () => {
  const a = await rawBackend((req) => `[${req.inputs.map((i) => candidate(String(i.id), 0)).join(',')}]`);
  const gw = await gateway(oneBackend({ a: { url: a } }));
  const res = await gw.post('{"request_id":"r","inputs":[{"id":-0,"instruction":{"type":"env","content":"x"}}]}');
  assert.equal(res.status, 200, res.text);
  const memory = MEMORY.replace(/}$/, `,${TAG_A}}`);
  assert.equal(
    res.text,
    `[{"request_id":"r","source_id":-0,"candidate_index":0,"status":"completed","memory":${memory},"internal_steps":${STEPS},"output":${OUTPUT},"error":null}]`,
  );
});

test('candidates of an ensemble leg are renumbered into the client slot, their bytes unchanged', async () => {
  const leg = async (): Promise<string> =>
    rawBackend((req) => `[${req.inputs.flatMap((i) => Array.from({ length: i.num_outputs ?? 1 }, (_, c) => candidate(String(i.id), c))).join(',')}]`);
  const gw = await gateway({
    backends: { a: { url: await leg() }, b: { url: await leg() } },
    routes: [{ name: 'default', ensemble: { a: 1, b: 1 } }],
  });
  const res = await gw.post('{"request_id":"r","inputs":[{"id":7,"instruction":{"type":"env","content":"x"},"num_outputs":2}]}');
  assert.equal(res.status, 200, res.text);
  const out = res.json as { candidate_index: number; memory: Record<string, unknown> }[];
  assert.deepEqual(out.map((o) => o.candidate_index), [0, 1]);
  assert.equal(res.text.split(`"internal_steps":${STEPS},"output":${OUTPUT}`).length - 1, 2, res.text);
  assert.equal(res.text.split('"memory":{"b":1, "10":[1.0,-0,12345678901234567890],"2":"\\u00e9\\ud800","_gateway":').length - 1, 2, res.text);
});

test("a malformed candidate's slot carries its input's memory bytes, the old tag cut and the new one last", async () => {
  // Slot 1 is malformed (completed without an output); slot 0 is the backend's.
  const a = await rawBackend(
    (req) => `[${candidate(String(req.inputs[0]!.id), 0)},{"request_id":"r","source_id":${req.inputs[0]!.id},"candidate_index":1,"status":"completed","memory":{}}]`,
  );
  const gw = await gateway(oneBackend({ a: { url: a } }));
  const input = '{"z" : 1,"_gateway":{"backend":"gone","route":"default"}, "10":{"x":1.50}}';
  const res = await gw.post(`{"request_id":"r","inputs":[{"id":3,"instruction":{"type":"env","content":"x"},"memory":${input},"num_outputs":2}]}`);
  assert.equal(res.status, 200, res.text);
  const out = res.json as { status: string; error: { code: string } | null }[];
  assert.deepEqual(out.map((o) => o.status), ['completed', 'error']);
  assert.equal(out[1]!.error?.code, 'gateway_backend_invalid_response');
  assert.ok(res.text.includes(`"status":"error","memory":{"z" : 1,"10":{"x":1.50},${TAG_A}},"internal_steps":[],"output":null,`), res.text);
});

test('an answer of many candidates larger than the socket buffers is written whole on both fronts', async () => {
  // Nothing listens on port 1: every candidate is a gateway error candidate carrying the input's memory.
  const gw = await gateway(oneBackend({ a: { url: 'http://127.0.0.1:1' } }));
  const memory = `{"history":"${'h'.repeat(256 * 1024)}","10":1.0}`;
  const body = `{"request_id":"big","inputs":[{"id":1,"instruction":{"type":"env","content":"x"},"memory":${memory},"num_outputs":64}]}`;
  const res = await request(`${gw.url}/v1/responses`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const bytes = Buffer.from(await res.body.arrayBuffer());
  assert.equal(res.statusCode, 200);
  assert.equal(Number(res.headers['content-length']), bytes.length);
  const text = bytes.toString('utf8');
  const tagged = memory.replace(/}$/, ',"_gateway":{"backend":"a","route":"default"}}');
  assert.equal(text.split(`"memory":${tagged}`).length - 1, 64, 'every candidate carries the exact memory bytes');
  const parsed = JSON.parse(text) as { candidate_index: number }[];
  assert.deepEqual(parsed.map((o) => o.candidate_index), Array.from({ length: 64 }, (_, i) => i));
  // Injected into the front (light-my-request), the same bytes.
  const injected = await injectBatch(gw.app, { method: 'POST', url: '/v1/responses', payload: body, headers: { 'content-type': 'application/json' } });
  assert.equal(injected.statusCode, 200);
  assert.equal(Number(injected.headers['content-length']), injected.rawPayload.length);
  assert.ok(injected.rawPayload.equals(bytes), 'both fronts answer the same bytes');
});
