/**
 * Large bodies are read on the reader thread from either front (docs/memory-budget.md#yielding): the raw front's
 * batches and those fastify reads (a query string), with a Content-Length or chunked. What runs where is
 * observed through the reader thread's counts (reader/reader.ts `offloaded`): one request job per large body,
 * with a length or chunked, handed over as the memory it was received into (its store, or a Buffer of its own), none copied. The backend gets the
 * very bytes sent, and a UTF-16 body is decoded there too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OFFLOAD_BYTES, offloaded } from '../../src/reader/reader.js';
import { useFixtures } from '../helpers/fixtures.js';
import { postBytes } from '../helpers/raw-http.js';

/** A valid batch of one input whose memory holds `bytes` bytes of text. */
function bigBatch(id: string, bytes: number): Buffer {
  return Buffer.from(`{"request_id":"${id}","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"p":"${'p'.repeat(bytes)}"}}]}`);
}

/** Over OFFLOAD_BYTES, so read on the thread. */
const BIG = OFFLOAD_BYTES + 1024 * 1024;

const CASES = [
  { front: 'raw front', path: '/v1/responses', chunked: false },
  { front: 'raw front', path: '/v1/responses', chunked: true },
  { front: 'fastify (a query string)', path: '/v1/responses?x=1', chunked: false },
  { front: 'fastify (a query string)', path: '/v1/responses?x=1', chunked: true },
];

for (const c of CASES) {
  const how = c.chunked ? 'chunked' : 'with a Content-Length';
  test(`${c.front}, a 9 MB body ${how}: read on the reader thread, handed over as the memory it was received into, none copied, forwarded byte for byte`, async (t) => {
    const f = useFixtures(t);
    const a = await f.agent();
    const gw = await f.gateway({ backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
    const body = bigBatch(`${c.chunked ? 'c' : 'l'}-${c.path.length}`, BIG);
    const before = { ...offloaded.request };
    const res = await postBytes(gw.url, body, { path: c.path, chunked: c.chunked });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(offloaded.request.jobs - before.jobs, 1, 'one job on the reader thread');
    assert.equal(offloaded.request.copied - before.copied, 0, 'handed over as the memory it was received into, not copied here');
    const seen = a.requests.filter((r) => r.path === '/v1/responses');
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.raw, body.toString(), 'the backend got the bytes sent');
  });
}

test('a 9 MB UTF-16 body, chunked: decoded on the reader thread and forwarded as UTF-8; one that does not decode is a 400 naming its byte', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent();
  const gw = await f.gateway({ backends: { a: { url: a.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const utf8 = bigBatch('wide', BIG / 2);
  const wide = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(utf8.toString(), 'utf16le')]);
  const before = offloaded.request.jobs;
  const res = await postBytes(gw.url, wide, { chunked: true });
  assert.equal(res.status, 200, res.body.toString());
  assert.equal(offloaded.request.jobs - before, 1);
  assert.equal(a.requests.find((r) => r.path === '/v1/responses')?.raw, utf8.toString());
  // One byte short: an odd length, which no UTF-16 body has.
  const bad = await postBytes(gw.url, wide.subarray(0, wide.length - 1), { path: '/v1/responses?x=1', chunked: true });
  assert.equal(bad.status, 400, bad.body.toString());
  assert.match(bad.body.toString(), new RegExp(`not valid UTF-16LE \\(byte ${wide.length - 2}\\)`));
});
