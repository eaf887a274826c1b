/**
 * Every size counted (docs/limits-and-edges.md): the request_id and input ids in the answer estimate, backend error codes
 * bounded as metric labels, and a 413 a client sending its whole body first can read, on both fronts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';
import { sendThenRead } from '../helpers/raw-http.js';

const f = useFixtures();

test('a 1 MB request_id with num_outputs 1024 against max_answer_mb 128: the 422 naming the limit, not a 1 GB answer', async () => {
  const agent = await f.agent({ behaviour: { status: 503 } });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const res = await gw.post({ request_id: 'x'.repeat(1024 * 1024), inputs: [mkInput(1, { num_outputs: 1024 })] });
  assert.equal(res.status, 422, res.text.slice(0, 300));
  assert.ok(res.text.length < 10_000, `a short detail, got ${res.text.length} bytes`);
  const detail = (res.json as { detail: { loc: string[]; msg: string }[] }).detail;
  assert.deepEqual(detail[0]!.loc, ['body', 'request_id']);
  assert.match(detail[0]!.msg, /server\.max_answer_mb/);
  assert.equal(agent.requestsTo('/v1/responses').length, 0, 'no backend called');
  // The same id with one candidate fits.
  const ok = await gw.post({ request_id: 'x'.repeat(1024 * 1024), inputs: [mkInput(1)] });
  assert.equal(ok.status, 200);
});

test('an id of a million digits with num_outputs 1024 against max_answer_mb 128: the 422 naming the limit, not a 1 GB answer', async () => {
  const agent = await f.agent({ behaviour: { status: 503 } });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  // Every candidate repeats the id as its source_id; JSON.stringify cannot write an integer that long.
  const body = (n: number): string =>
    `{"request_id":"long-id","inputs":[{"id":${'9'.repeat(1_000_000)},"instruction":{"type":"user","content":"go"},"num_outputs":${n}}]}`;
  const res = await gw.post(body(1024));
  assert.equal(res.status, 422, res.text.slice(0, 300));
  assert.ok(res.text.length < 10_000, `a short detail, got ${res.text.length} bytes`);
  const detail = (res.json as { detail: { loc: string[]; msg: string }[] }).detail;
  assert.deepEqual(detail[0]!.loc, ['body', 'inputs']);
  assert.match(detail[0]!.msg, /server\.max_answer_mb/);
  assert.equal(agent.requestsTo('/v1/responses').length, 0, 'no backend called');
  // The same id with a few candidates fits: its error candidates each carry the whole id.
  const ok = await gw.post(body(3));
  assert.equal(ok.status, 200);
  assert.ok(ok.text.length > 3_000_000, `three candidates with the id, got ${ok.text.length} bytes`);
});

test('backend error codes 1 MB long: /metrics stays small, counts them as `other`, and candidates keep the code', async () => {
  const long = 'E'.repeat(1024 * 1024);
  const agent = await f.agent({ behaviour: { errorCandidates: { code: long, message: 'm' } } });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  for (let i = 0; i < 5; i++) {
    const res = await gw.post({ request_id: `r${i}`, inputs: [mkInput(1)] });
    assert.equal(res.status, 200);
    assert.equal((res.json as { error: { code: string } }[])[0]!.error.code, long, 'the candidate carries the code unchanged');
  }
  const metrics = await fetch(`${gw.url}/metrics`);
  assert.equal(metrics.status, 200);
  const text = await metrics.text();
  assert.ok(text.length < 200_000, `metrics ${text.length} bytes`);
  assert.match(text, /magma_gateway_candidate_errors_total\{agent="default",backend="a",code="other"\} 5/);
});

const BIG = Buffer.alloc(5 * 1024 * 1024, 0x20);

for (const path of ['/v1/responses', '/v1/responses?x=1']) {
  test(`a client sending its whole body over body_limit_mb before reading gets the 413 at ${path}`, async () => {
    const gw = await f.gateway({ server: { body_limit_mb: 1, body_discard_mb: 16 }, backends: { a: { url: 'http://127.0.0.1:1' } }, routes: [{ name: 'd', backend: 'a' }] });
    const sized = await sendThenRead(gw.url, `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${BIG.length}`, BIG);
    assert.equal(sized.sendError, undefined);
    assert.equal(sized.status, 413, sized.raw.slice(0, 300));
    assert.equal(sized.headers.connection, 'close');
    assert.equal((JSON.parse(sized.body) as { code: string }).code, 'GATEWAY_ERR_BODY_TOO_LARGE');
    // Chunked: the size is learnt as it arrives.
    const chunked = Buffer.concat([Buffer.from(`${BIG.length.toString(16)}\r\n`), BIG, Buffer.from('\r\n0\r\n\r\n')]);
    const streamed = await sendThenRead(gw.url, `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked`, chunked);
    assert.equal(streamed.sendError, undefined);
    assert.equal(streamed.status, 413, streamed.raw.slice(0, 300));
    assert.match(streamed.body, /server\.body_limit_mb \(1 MiB\)/);
  });
}

test('a body over body_limit_mb by its declared length is answered at once, before any of it is sent', async () => {
  const gw = await f.gateway({ server: { body_limit_mb: 1, body_discard_mb: 1 }, backends: { a: { url: 'http://127.0.0.1:1' } }, routes: [{ name: 'd', backend: 'a' }] });
  // Only the head is sent: the answer comes without the gateway waiting for a body it would not drain.
  const res = await sendThenRead(gw.url, `POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${10 * 1024 * 1024}`, '');
  assert.equal(res.status, 413);
});
