/**
 * Streamed answers (dispatch/streamed-answer.ts, docs/protocol-fidelity.md#streamed-answers): a backend answer
 * over server.stream_answers_over_mb that carries the whole batch is written as it arrives. Byte for byte what
 * the whole-answer path writes; a backend breaking off after the first byte leaves error candidates for the rest;
 * a client that does not read holds the backend back; a small answer is not streamed. Real loopback servers.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import type { FakeBehaviour } from '../helpers/fake-agent.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, type Cand, type TestGateway } from '../helpers/gateway.js';
import { loggerOptions } from '../../src/logging.js';
import { waitFor } from '../helpers/wait.js';
import { injectBatch } from '../helpers/inject.js';
import { postNeverReading } from '../helpers/raw-http.js';
import { offloaded } from '../../src/reader/reader.js';

/** Every answer of more than about 100 bytes streams. */
const STREAM_ALL = { stream_answers_over_mb: 0.0001 };

function config(url: string, server: Record<string, unknown> = {}): Record<string, unknown> {
  return oneBackend({ a: url }, { server });
}

/** A completed candidate of `requestId` for input `id`, its memory padded to about `pad` bytes. */
function candidate(requestId: string, id: number, index: number, pad = 0): string {
  return JSON.stringify({
    request_id: requestId,
    source_id: id,
    candidate_index: index,
    status: 'completed',
    memory: { note: `m${index}`, pad: 'x'.repeat(pad), _gateway: { backend: 'old', route: 'old' } },
    internal_steps: [{ step: index, t: 'a "quoted" \\ step' }],
    output: { say: `say ${index} é`, tool_calls: [] },
    error: null,
  });
}

const VARIANTS: Record<string, FakeBehaviour> = {
  plain: {},
  reverse: { reverse: true },
  missing: { missing: true },
  extra: { extra: true },
  malformed: { malformedCandidate: 1 },
  errors: { errorCandidates: true },
};

test('a streamed answer is byte for byte what the whole-answer path writes, on both fronts', async (t) => {
  const f = useFixtures(t);
  // Probes have no body: the correct agent.
  const a = await f.agent({ behaviour: (r) => VARIANTS[String((r.body as { request_id?: unknown } | undefined)?.request_id).split('-')[0] ?? ''] ?? {} });
  const streamed = await f.gateway(config(a.url, STREAM_ALL));
  const whole = await f.gateway(config(a.url));
  const inputs = [mkInput(7, { num_outputs: 3, memory: { keep: [1, 2.50, 'é'], _gateway: { backend: 'a', route: 'default' } } }), mkInput(8, { num_outputs: 2 })];
  const wholeBytes = new Map<string, string>();
  for (const variant of Object.keys(VARIANTS)) {
    const body = { request_id: `${variant}-1`, inputs };
    const s = await streamed.post(body);
    const w = await whole.post(body);
    assert.equal(s.status, 200, variant);
    assert.equal(w.status, 200, variant);
    assert.equal(s.bytes.toString('utf8'), w.bytes.toString('utf8'), variant);
    assert.equal(s.headers.get('content-length'), null, `${variant}: streamed without a length`);
    assert.equal(w.headers.get('content-length'), String(w.bytes.length), variant);
    wholeBytes.set(variant, w.bytes.toString('utf8'));
  }
  // Every candidate is counted as the whole-answer path counts it.
  const counted = async (gw: TestGateway): Promise<string[]> =>
    (await (await fetch(`${gw.url}/metrics`)).text()).split('\n').filter((l) => /^magma_gateway_candidate(s|_errors)_total\{/.test(l));
  const streamedCounts = await counted(streamed);
  assert.ok(streamedCounts.length > 0);
  assert.deepEqual(streamedCounts, await counted(whole));
  // Injected into the front (light-my-request), it streams the same bytes, the overhead as a trailer.
  for (const [variant, bytes] of wholeBytes) {
    const injected = await injectBatch(streamed.app, { method: 'POST', url: '/v1/responses', payload: { request_id: `${variant}-1`, inputs } });
    assert.equal(injected.statusCode, 200);
    assert.equal(injected.headers['content-length'], undefined);
    assert.equal(injected.body, bytes, `${variant} (inject)`);
    assert.match(injected.trailers['x-gateway-overhead-ms'] ?? '', /^\d+\.\d\d$/);
  }
});

test('an answer without a declared length streams once it is longer than the key, chunk boundaries anywhere', async (t) => {
  const f = useFixtures(t);
  const url = (await f.rawAgent((res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const text = `[${[0, 1, 2, 3].map((c) => candidate('chunked-1', 5, c, 300)).join(',')}]`;
    // Seven-byte chunks: every element boundary, escape and string falls inside a chunk somewhere.
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += 7) res.write(bytes.subarray(at, at + 7));
    res.end();
  })).url;
  const streamed = await f.gateway(config(url, STREAM_ALL));
  const whole = await f.gateway(config(url));
  const body = { request_id: 'chunked-1', inputs: [mkInput(5, { num_outputs: 4 })] };
  const s = await streamed.post(body);
  const w = await whole.post(body);
  assert.equal(s.headers.get('content-length'), null);
  assert.equal(s.bytes.toString('utf8'), w.bytes.toString('utf8'));
  const cands = JSON.parse(s.bytes.toString('utf8')) as Cand[];
  assert.deepEqual(cands.map((c) => [c.status, c.candidate_index, c.memory._gateway?.backend]), [0, 1, 2, 3].map((i) => ['completed', i, 'a']));
});

for (const how of ['reset', 'garbage'] as const) {
  test(`a backend that breaks off mid-answer (${how}): 200, a complete answer, error candidates for the rest`, async (t) => {
    const f = useFixtures(t);
    let clientReading: () => void = () => undefined;
    const reading = new Promise<void>((resolve) => (clientReading = resolve));
    const url = (await f.rawAgent((res) => {
      // Two candidates known whole: each is followed by its separator.
      const first = `[${candidate('cut-1', 3, 0, 200)},${candidate('cut-1', 3, 1, 200)},`;
      res.writeHead(200, { 'content-type': 'application/json', ...(how === 'reset' ? { 'content-length': String(first.length * 3) } : {}) });
      res.write(first);
      // Once the client has the answer's first bytes, the rest never comes: the connection drops, or what
      // follows is not JSON.
      void reading.then(() => (how === 'reset' ? res.socket?.destroy() : res.end('{"request_id": nope}]')));
    })).url;
    const gw = await f.gateway(config(url, STREAM_ALL));
    const memory = { kept: 'input memory', n: 1.0 };
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      body: JSON.stringify({ request_id: 'cut-1', inputs: [mkInput(3, { num_outputs: 5, memory })] }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 200);
    assert.ok(res.body);
    const reader = res.body.getReader();
    const parts: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      clientReading();
    }
    const cands = JSON.parse(Buffer.concat(parts).toString('utf8')) as Cand[];
    assert.deepEqual(cands.map((c) => [c.candidate_index, c.status, c.error?.code ?? null]), [
      [0, 'completed', null],
      [1, 'completed', null],
      [2, 'error', 'gateway_backend_invalid_response'],
      [3, 'error', 'gateway_backend_invalid_response'],
      [4, 'error', 'gateway_backend_invalid_response'],
    ]);
    // An error candidate keeps the input's memory, tagged, as on the whole-answer path.
    assert.deepEqual(cands[4]?.memory, { ...memory, _gateway: { backend: 'a', route: 'default' } });
    assert.match(cands[2]?.error?.message ?? '', /broke off after 2 candidates/);
  });
}

test('an answer invalid before its first candidate is written fails over as a whole answer does', async (t) => {
  const f = useFixtures(t);
  const bad = (await f.rawAgent((res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`[${candidate('other-request', 1, 0, 200)}]`);
  })).url;
  const good = await f.agent({ name: 'good' });
  const gw = await f.gateway(oneBackend({ bad: { url: bad }, good }, { route: { fallback: ['good'] }, server: STREAM_ALL }));
  const res = await gw.post({ request_id: 'fo-1', inputs: [mkInput(1, { num_outputs: 2 })] });
  const cands = JSON.parse(res.bytes.toString('utf8')) as Cand[];
  assert.deepEqual(cands.map((c) => [c.status, c.memory._gateway?.backend]), [
    ['completed', 'good'],
    ['completed', 'good'],
  ]);
});

test('a client that does not read holds the backend back; reading again completes the answer', async (t) => {
  const f = useFixtures(t);
  const n = 48;
  const pad = 1024 * 1024;
  let written = 0;
  let blocked = false;
  let finished = false;
  const url = (await f.rawAgent((res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let c = 0;
    const pump = (): void => {
      blocked = false;
      while (c < n) {
        const piece = `${c === 0 ? '[' : ','}${candidate('slow-1', 9, c, pad)}${c === n - 1 ? ']' : ''}`;
        c++;
        written += piece.length;
        if (!res.write(piece)) {
          blocked = true;
          res.once('drain', pump);
          return;
        }
      }
      res.end(() => (finished = true));
    };
    pump();
  })).url;
  const gw = await f.gateway(config(url, { stream_answers_over_mb: 1, max_answer_mb: 1024 }));
  const port = Number(new URL(gw.url).port);
  const body = JSON.stringify({ request_id: 'slow-1', inputs: [mkInput(9, { num_outputs: n })] });
  const socket = connect(port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.pause();
  socket.write(`POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  await waitFor('the backend to be held back', () => blocked);
  // Turns of the event loop in which an unpaced gateway would read on; the backend stays blocked.
  for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
  assert.equal(blocked, true);
  assert.equal(finished, false);
  assert.ok(written < n * pad, `the backend wrote ${written} of ${n * pad} bytes`);
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.resume();
  await waitFor('the whole answer', () => Buffer.concat(chunks).includes('\r\n0\r\n'), { timeoutMs: 60_000 });
  assert.equal(finished, true);
  const raw = Buffer.concat(chunks).toString('latin1');
  assert.match(raw, /^HTTP\/1\.1 200/);
  assert.match(raw, /transfer-encoding: chunked/i);
  assert.match(raw, /x-gateway-overhead-ms: \d+\.\d\d\r\n\r\n$/);
});

test('a streamed answer whose time runs out while its client holds it back does not count against the replica', async (t) => {
  const f = useFixtures(t);
  let blocked = false;
  let cut = false;
  const url = (await f.rawAgent((res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.once('close', () => (cut = !res.writableFinished));
    let c = 0;
    // As fast as the gateway reads: it is paced by a client that reads nothing.
    const pump = (): void => {
      blocked = false;
      while (c < 400) {
        const piece = `${c === 0 ? '[' : ','}${candidate('held-1', 9, c, 256 * 1024)}`;
        c++;
        if (!res.write(piece)) {
          blocked = true;
          res.once('drain', pump);
          return;
        }
      }
    };
    pump();
  })).url;
  const gw = await f.gateway({
    backends: { a: { url, timeout_s: 1, eject_after_failures: 1 } },
    routes: [{ name: 'd', backend: 'a' }],
    server: { stream_answers_over_mb: 0.5, max_answer_mb: 1024 },
  });
  const socket = postNeverReading(gw.url, JSON.stringify({ request_id: 'held-1', inputs: [mkInput(9, { num_outputs: 400 })] }));
  try {
    await waitFor('the backend to be held back', () => blocked);
    await waitFor('the call to be cut at timeout_s', () => cut, { timeoutMs: 30_000 });
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.resume();
    await waitFor('the whole answer', () => Buffer.concat(chunks).includes('\r\n0\r\n'), { timeoutMs: 60_000 });
    const body = Buffer.concat(chunks).toString('latin1');
    assert.match(body, /gateway_backend_timeout/, 'the candidates past the cut are timeout errors');
    const backends = (await (await fetch(`${gw.adminUrl}/gateway/backends`)).json()) as { backends: { name: string; replicas: { state: string; consecutive_failures: number }[] }[] };
    const replica = backends.backends.find((b) => b.name === 'a')?.replicas[0];
    assert.equal(replica?.consecutive_failures, 0, 'the client\'s pace, not the replica\'s health');
    assert.equal(replica?.state, 'ready');
  } finally {
    socket.destroy();
  }
});

test('an answer under stream_answers_over_mb is not streamed: a content-length and the overhead header', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent();
  const gw = await f.gateway(config(a.url, { stream_answers_over_mb: 1 }));
  const res = await gw.post({ request_id: 'small-1', inputs: [mkInput(1, { num_outputs: 2 })] });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-length'), String(res.bytes.length));
  assert.match(res.headers.get('x-gateway-overhead-ms') ?? '', /^\d+\.\d\d$/);
  // The default is 64 MB: every answer of the tests above without the key is a whole one.
  const whole = await f.gateway(config(a.url));
  assert.equal(whole.app.gateway.current.config.server.stream_answers_over_mb, 64);
});

for (const how of ['short', 'invalid'] as const) {
  test(`a streamed answer ${how === 'short' ? 'one candidate short' : 'with an invalid candidate'}: its good candidates go out, the backend's outcome is invalid_response in metric, log and Backends data`, async (t) => {
    const f = useFixtures(t);
    const url = (await f.rawAgent((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const cands = [0, 1, 2].map((c) => candidate('part-1', 4, c, 300));
      // Short: the last candidate never comes. Invalid: the middle one is completed without an output.
      if (how === 'short') cands.pop();
      else cands[1] = JSON.stringify({ ...(JSON.parse(cands[1] ?? '{}') as object), output: null });
      res.end(`[${cands.join(',')}]`);
    })).url;
    const lines: string[] = [];
    const gw = await f.gateway(config(url, STREAM_ALL), { logger: { ...loggerOptions('info'), stream: { write: (l: string): void => void lines.push(l) } } });
    const res = await gw.post({ request_id: 'part-1', inputs: [mkInput(4, { num_outputs: 3 })] });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), null, 'streamed');
    const cands = JSON.parse(res.bytes.toString('utf8')) as Cand[];
    const bad = how === 'short' ? 2 : 1;
    // The salvaged candidates and the error candidate in its place, as today.
    assert.deepEqual(
      cands.map((c) => [c.candidate_index, c.status, c.memory._gateway?.backend]),
      [0, 1, 2].map((i) => [i, i === bad ? 'error' : 'completed', 'a']),
    );
    assert.equal(cands[bad]?.error?.code, 'gateway_backend_invalid_response');
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /magma_gateway_backend_requests_total\{backend="a",outcome="gateway_backend_invalid_response"\} 1/);
    assert.doesNotMatch(metrics, /magma_gateway_backend_requests_total\{backend="a",outcome="ok"\} [1-9]/);
    const backends = (await (await fetch(`${gw.adminUrl}/gateway/backends`)).json()) as { backends: { name: string; outcomes: Record<string, number> }[] };
    assert.deepEqual(backends.backends.find((b) => b.name === 'a')?.outcomes, { gateway_backend_invalid_response: 1 });
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.backend === 'a');
    assert.ok(logged.some((l) => l.code === 'gateway_backend_invalid_response' && l.candidates === 1 && l.written === 3), JSON.stringify(logged));
  });
}

for (const declared of [true, false]) {
  test(`bytes after the closing ] (${declared ? 'content-length' : 'chunked'}): a streamed answer is refused or cut as the whole-answer path refuses it`, async (t) => {
    const f = useFixtures(t);
    // Over 1 MB, so streamed under stream_answers_over_mb 1: `one-*` one candidate, `three-*` three.
    const url = (await f.rawAgent((res, body) => {
      const requestId = (JSON.parse(body.toString('utf8')) as { request_id: string }).request_id;
      const n = requestId.startsWith('one') ? 1 : 3;
      const text = `[${Array.from({ length: n }, (_, c) => candidate(requestId, 6, c, (1536 * 1024) / n)).join(',')}]\n garbage`;
      res.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(Buffer.byteLength(text)) } : {}) });
      res.end(text);
    })).url;
    const good = await f.agent({ name: 'good' });
    const outcomes = async (gw: TestGateway): Promise<string[]> =>
      (await (await fetch(`${gw.url}/metrics`)).text()).split('\n').filter((l) => /^magma_gateway_backend_requests_total\{backend="a",.* [1-9]/.test(l));
    const lines: string[] = [];
    const logger = { logger: { ...loggerOptions('info'), stream: { write: (l: string): void => void lines.push(l) } } };
    const streamed = await f.gateway(oneBackend({ a: url, good }, { route: { fallback: ['good'] }, server: { stream_answers_over_mb: 1 } }), logger);
    const whole = await f.gateway(oneBackend({ a: url, good }, { route: { fallback: ['good'] } }));
    // Nothing written yet when the bytes come: refused whole, the fallback answers, byte for byte as for a whole answer.
    const one = { request_id: 'one-1', inputs: [mkInput(6, { num_outputs: 1 })] };
    const s = await streamed.post(one);
    const w = await whole.post(one);
    assert.equal(s.bytes.toString('utf8'), w.bytes.toString('utf8'));
    assert.deepEqual((JSON.parse(s.bytes.toString('utf8')) as Cand[]).map((c) => [c.status, c.memory._gateway?.backend]), [['completed', 'good']]);
    // It was the streamed path that refused it: the splitter's words.
    assert.ok(lines.some((l) => /extra data after the JSON value/.test(l)), 'refused by the stream');
    // Candidates already written: the last is held until the answer ends, so it becomes an error candidate and the
    // client never gets the answer as if it were valid; a whole answer fails every candidate and fails over.
    const three = { request_id: 'three-1', inputs: [mkInput(6, { num_outputs: 3 })] };
    const s3 = JSON.parse((await streamed.post(three)).bytes.toString('utf8')) as Cand[];
    assert.deepEqual(s3.map((c) => [c.status, c.error?.code ?? null]), [['completed', null], ['completed', null], ['error', 'gateway_backend_invalid_response']]);
    const w3 = JSON.parse((await whole.post(three)).bytes.toString('utf8')) as Cand[];
    assert.deepEqual(w3.map((c) => [c.status, c.memory._gateway?.backend]), [0, 1, 2].map(() => ['completed', 'good']));
    // Either way the backend's answer counts as invalid, twice, and never as ok.
    const invalid = ['magma_gateway_backend_requests_total{backend="a",outcome="gateway_backend_invalid_response"} 2'];
    assert.deepEqual(await outcomes(streamed), invalid);
    assert.deepEqual(await outcomes(whole), invalid);
  });
}

test('a streamed candidate over 8 MB is indexed on the reader thread, in its place among the others, the same bytes', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent();
  const streamed = await f.gateway(config(a.url, STREAM_ALL));
  const whole = await f.gateway(config(a.url));
  const big = { pad: 'é'.repeat(4.5 * 1024 * 1024) };
  const body = { request_id: 'big-one', inputs: [mkInput(1, { num_outputs: 2 }), mkInput(2, { memory: big }), mkInput(3)] };
  const before = offloaded.answer.jobs;
  const s = await streamed.post(body);
  assert.equal(offloaded.answer.jobs, before + 1, 'the one large candidate, and only it, went to the thread');
  const w = await whole.post(body);
  assert.equal(s.status, 200);
  assert.equal(s.headers.get('content-length'), null, 'streamed');
  assert.ok(s.bytes.length > 9 * 1024 * 1024);
  assert.ok(s.bytes.equals(w.bytes), 'byte for byte what the whole-answer path writes');
  assert.deepEqual((s.json as Cand[]).map((c) => [c.source_id, c.candidate_index, c.status]), [[1, 0, 'completed'], [1, 1, 'completed'], [2, 0, 'completed'], [3, 0, 'completed']]);
});

test('a streamed candidate over 8 MB that is not JSON, with candidates after it, ends the answer at once with error candidates', async (t) => {
  // The large candidate goes to the reader thread and the ones after it wait behind it; it comes back invalid. The
  // ones behind returned without waking the chunk they came in, so the answer never ended: the client got every
  // candidate and the closing ], then had its connection dropped at request_timeout_s.
  const f = useFixtures(t);
  const url = (await f.rawAgent((res, raw) => {
    const rid = (JSON.parse(raw.toString('utf8')) as { request_id: string }).request_id;
    const bad = candidate(rid, 1, 1, 9 * 1024 * 1024).replace('"memory":{', '"memory":{,');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`[${candidate(rid, 1, 0)},${bad},${candidate(rid, 2, 0)},${candidate(rid, 2, 1)}]`);
  })).url;
  const gw = await f.gateway(oneBackend({ a: url }, { server: STREAM_ALL, request_timeout_s: 30 }));
  const res = await gw.post({ request_id: 'big-bad', inputs: [mkInput(1, { num_outputs: 2 }), mkInput(2, { num_outputs: 2 })] });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-length'), null, 'streamed');
  assert.deepEqual(
    (res.json as Cand[]).map((c) => [c.source_id, c.candidate_index, c.error?.code ?? c.status]),
    [[1, 0, 'completed'], [1, 1, 'gateway_backend_invalid_response'], [2, 0, 'gateway_backend_invalid_response'], [2, 1, 'gateway_backend_invalid_response']],
  );
});
