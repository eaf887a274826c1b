/**
 * A streamed answer its client reads as fast as it comes gives its candidates back as the response takes them
 * (docs/memory-budget.md#streamed-answers): the batch's hold stays a few candidates, not the answer. Real
 * loopback backend writing a candidate every few milliseconds, the held count read from
 * `magma_gateway_memory_budget_held_bytes` while the answer streams.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { mkInput, type TestGateway } from '../helpers/gateway.js';

const PAD = 256 * 1024;
const N = 48;

async function held(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('magma_gateway_memory_budget_held_bytes '));
  return Number(line?.slice(line.lastIndexOf(' ') + 1));
}

test('a streamed answer read as fast as it comes holds a few candidates, not the answer', async (t) => {
  const f = useFixtures(t);
  const { url } = await f.rawAgent((res, body) => {
    const id = (JSON.parse(body.toString('utf8')) as { request_id: string }).request_id;
    const pieces = Array.from({ length: N }, (_, c) => {
      const cand = JSON.stringify({ request_id: id, source_id: 9, candidate_index: c, status: 'completed', memory: { pad: 'x'.repeat(PAD) }, internal_steps: [], output: { say: 's', tool_calls: [] }, error: null });
      return `${c === 0 ? '[' : ','}${cand}${c === N - 1 ? ']' : ''}`;
    });
    // A declared length: streamed from the first byte, nothing held before.
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(pieces.reduce((n, p) => n + p.length, 0)) });
    let c = 0;
    const next = (): void => {
      res.write(pieces[c++]);
      if (c < N) setTimeout(next, 5);
      else res.end();
    };
    next();
  });
  const gw = await f.gateway(oneBackend({ a: url }, { server: { memory_budget_mb: 64, stream_answers_over_mb: 1 } }));
  const res = await fetch(`${gw.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ request_id: 'fast-1', inputs: [mkInput(9, { num_outputs: N })] }) });
  assert.equal(res.status, 200);
  assert.ok(res.body);
  const reader = res.body.getReader();
  let got = 0;
  let most = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    got += value.length;
    // Sampled once the answer is well under way.
    if (got > 4 * PAD && got < (N - 4) * PAD) most = Math.max(most, await held(gw));
  }
  assert.ok(got > N * PAD, `the whole answer: ${got} bytes`);
  assert.ok(most > 0, 'sampled while streaming');
  assert.ok(most < 6 * PAD, `held at most ${most} bytes while streaming, not the ${N * PAD} of the answer`);
});
