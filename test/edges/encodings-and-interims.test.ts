/**
 * The last protocol edges (docs/limits-and-edges.md): bodies in the encodings FastAPI's json.loads accepts
 * (a UTF-8 BOM, UTF-16, UTF-32), a lone-surrogate escape, repeated protocol keys read last-wins, and 1xx
 * interim answers from a backend, all on real sockets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useFixtures } from '../helpers/fixtures.js';

const f = useFixtures();

const INPUT = '{"id":1,"instruction":{"type":"user","content":"é 😀"}}';
const BODY = `{"request_id":"r1","inputs":[${INPUT}]}`;
/** BODY with another request_id (the gateway replays an answer to a request_id it has seen). */
const bodyOf = (id: string): string => BODY.replace('"r1"', JSON.stringify(id));

function utf16be(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  const be = Buffer.alloc(le.length);
  for (let i = 0; i < le.length; i += 2) {
    be[i] = le[i + 1]!; // i + 1 < length: utf16le is even
    be[i + 1] = le[i]!;
  }
  return be;
}

function utf32le(text: string): Buffer {
  const cps = [...text].map((c) => c.codePointAt(0)!); // one code point per element of the spread
  const b = Buffer.alloc(cps.length * 4);
  cps.forEach((cp, i) => b.writeUInt32LE(cp, i * 4));
  return b;
}

test('a body with a UTF-8 BOM, or in UTF-16 or UTF-32, is read as FastAPI reads it and forwarded as UTF-8', async () => {
  // python3 -c 'import json; [json.loads(b) for b in (b"\xef\xbb\xbf{}", "{}".encode("utf-16"), "{}".encode("utf-16-be"), "{}".encode("utf-32-le"))]'
  // accepts each (json.detect_encoding), and a strict pydantic AgentRequest validates the result.
  const agent = await f.agent({ name: 'a' });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const bodies: [string, Buffer][] = [
    ['e1', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(bodyOf('e1'))])],
    ['e2', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(bodyOf('e2'), 'utf16le')])],
    ['e3', utf16be(bodyOf('e3'))],
    ['e4', utf32le(bodyOf('e4'))],
  ];
  for (const [name, body] of bodies) {
    const before = agent.requestsTo('/v1/responses').length;
    const res = await gw.post(body);
    assert.equal(res.status, 200, `${name}: ${JSON.stringify(res.json)}`);
    const cands = res.json as { status: string; request_id: string }[];
    assert.equal(cands.length, 1, name);
    assert.equal(cands[0]!.status, 'completed', name);
    const sent = agent.requestsTo('/v1/responses')[before]!;
    assert.equal(sent.raw, bodyOf(name), name);
  }
});

test('a UTF-16 body that does not decode (a lone surrogate, an odd length) is a 400 naming the encoding and the byte', async () => {
  const agent = await f.agent({ name: 'a' });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const lone = Buffer.concat([Buffer.from('{"request_id":"', 'utf16le'), Buffer.from([0x00, 0xd8]), Buffer.from('","inputs":[]}', 'utf16le')]);
  const odd = Buffer.concat([Buffer.from(BODY, 'utf16le'), Buffer.from([0x20])]);
  for (const [body, at] of [[lone, 30], [odd, Buffer.from(BODY, 'utf16le').length]] as const) {
    const res = await gw.post(body);
    assert.equal(res.status, 400);
    const j = res.json as { code: string; detail: string };
    assert.equal(j.code, 'GATEWAY_ERR_BODY_ENCODING');
    assert.equal(j.detail, `There was an error parsing the body: it is not valid UTF-16LE (byte ${at})`);
  }
  assert.equal(agent.requestsTo('/v1/responses').length, 0);
});

test('a lone-surrogate escape in request_id is accepted, as json.loads and pydantic accept it, and forwarded as the escape', async () => {
  // python3 -c 'import json; print(repr(json.loads(b"{\"request_id\":\"\\\\ud800\"}")["request_id"]))' -> '\ud800'
  const agent = await f.agent({ name: 'a' });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const body = `{"request_id":"a\\ud800","inputs":[${INPUT}]}`;
  const res = await gw.post(body);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(agent.requestsTo('/v1/responses')[0]!.raw, body);
});

test('a repeated protocol key is its last copy over HTTP: a shadowed copy with an unknown field is no 422, the last copy is forwarded', async () => {
  const agent = await f.agent({ name: 'a' });
  const gw = await f.gateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  const body = `{"request_id":"r2","inputs":[{"id":9,"bogus":1,"instruction":{"type":"user","content":"old"}}],"inputs":[{"id":1,"instruction":{"type":"user","content":"old","x":1},"instruction":{"type":"env","content":"new"}}]}`;
  const res = await gw.post(body);
  assert.equal(res.status, 200, JSON.stringify(res.json));
  assert.equal(agent.requestsTo('/v1/responses')[0]!.raw, '{"request_id":"r2","inputs":[{"id":1,"instruction":{"type":"env","content":"new"}}]}');
});

test('1xx from a backend: 102 and 103 are skipped; an unasked 100 Continue is read past: every candidate completes', async () => {
  const skip = await f.agent({ name: 's', behaviour: (_r, i) => ({ interim: i % 2 === 0 ? 102 : 103 }) });
  const cont = await f.agent({ name: 'c', behaviour: { interim: 100 } });
  const gw = await f.gateway({
    backends: { s: { url: skip.url }, c: { url: cont.url } },
    routes: [{ name: 's', match: { 'attributes.to': 's' }, backend: 's' }, { name: 'c', backend: 'c' }],
  });
  for (const id of ['r3', 'r4']) {
    const res = await gw.post(`{"request_id":"${id}","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"attributes":{"to":"s"}}]}`);
    assert.equal(res.status, 200);
    assert.equal((res.json as { status: string }[])[0]!.status, 'completed');
  }
  const res = await gw.post(BODY);
  assert.equal(res.status, 200);
  const c = (res.json as { status: string; error?: { code: string; message: string } }[])[0]!;
  assert.equal(c.status, 'completed', JSON.stringify(c));
  assert.ok(cont.requestsTo('/v1/responses').length >= 1);
});
