/**
 * Protocol edges (docs/limits-and-edges.md): an HTTP/1.0 client of a large answer, coaching bodies checked as
 * bytes, a bad `%` escape in the path and an unmeetable `Expect` answered in the gateway's `{"detail","code"}`
 * shape, on real sockets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';
import { sendThenRead } from '../helpers/raw-http.js';

const f = useFixtures();
const COACHING = { capabilities: { inference: true, coaching: true }, specialized_coaching: ['failure'] };

test('an HTTP/1.0 client of an answer over stream_answers_over_mb gets the whole answer with a content-length and its overhead header', async () => {
  const agent = await f.agent({ name: 'a' });
  const gw = await f.gateway({ server: { stream_answers_over_mb: 0.0001 }, backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const batch = (id: string): string => JSON.stringify({ request_id: id, inputs: [mkInput(1, { num_outputs: 3 }), mkInput(2)] });
  for (const path of ['/v1/responses', '/v1/responses?q=1']) {
    const body = batch(`r10${path}`);
    const res = await sendThenRead(gw.url, `POST ${path} HTTP/1.0\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}`, body);
    assert.equal(res.status, 200, res.raw.slice(0, 400));
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body));
    assert.match(res.headers['x-gateway-overhead-ms'] ?? '', /^\d+\.\d\d$/);
    const cands = JSON.parse(res.body) as { status: string }[];
    assert.equal(cands.length, 4);
    assert.ok(cands.every((c) => c.status === 'completed'));
    assert.equal(res.headers['x-gateway-replay'], undefined);
  }
  // The same answer to an HTTP/1.1 client is streamed (chunked, the overhead as a trailer).
  const body = batch('r11');
  const streamed = await sendThenRead(gw.url, `POST /v1/responses HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}`, body);
  assert.equal(streamed.headers['transfer-encoding'], 'chunked', streamed.raw.slice(0, 300));
});

test('a coaching body that is not UTF-8 is a 400 naming the byte, and nothing is forwarded', async () => {
  const agent = await f.agent({ name: 'a', behaviour: { info: COACHING } });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const bad = Buffer.concat([Buffer.from('{"budget": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
  for (const [method, path] of [['PUT', '/v1/coaching/sessions/r1'], ['POST', '/v1/coaching']] as const) {
    const res = await fetch(`${gw.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: bad });
    assert.equal(res.status, 400);
    const json = (await res.json()) as { code: string; detail: string };
    assert.equal(json.code, 'GATEWAY_ERR_BODY_ENCODING');
    assert.match(json.detail, /not valid UTF-8 \(byte 12\)/);
  }
  assert.equal(agent.requests.filter((r) => r.path.startsWith('/v1/coaching')).length, 0);
  // A valid one still goes through.
  const ok = await fetch(`${gw.url}/v1/coaching/sessions/r1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"budget": "é"}' });
  assert.equal(ok.status, 204);
  assert.equal(agent.requestsTo('/v1/coaching/sessions/r1')[0]!.raw, '{"budget": "é"}');
});

test('a bad % escape in the path and Expect: 200-ok are answered {"detail","code"} on both listeners', async () => {
  const gw = await f.gateway({ backends: { a: { url: 'http://127.0.0.1:1' } }, routes: [{ name: 'd', backend: 'a' }] });
  for (const base of [gw.url, gw.adminUrl]) {
    const bad = await sendThenRead(base, 'GET /v1/%zzinfo HTTP/1.1\r\nhost: x\r\nconnection: close', '');
    assert.equal(bad.status, 400, bad.raw);
    const b = JSON.parse(bad.body) as { code: string; detail: string };
    assert.equal(b.code, 'GATEWAY_ERR_BAD_REQUEST');
    assert.match(b.detail, /"%" must be followed by two hex digits/);
    const expect = await sendThenRead(base, 'POST /v1/responses HTTP/1.1\r\nhost: x\r\nexpect: 200-ok\r\ncontent-type: application/json\r\ncontent-length: 2', '{}');
    assert.equal(expect.status, 417, expect.raw);
    assert.equal(expect.headers.connection, 'close');
    assert.equal((JSON.parse(expect.body) as { code: string }).code, 'GATEWAY_ERR_EXPECTATION_FAILED');
  }
});
