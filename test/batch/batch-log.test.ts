/**
 * The batch log line (docs/limits-and-edges.md#logs), read from the CLI's stdout as an operator reads it:
 * it carries the x-request-id every backend call carried and the trace id, and a long `request_id` is cut to
 * a bounded prefix with its full length.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { killAll, runCli } from '../helpers/cli-process.js';
import { configFile } from '../helpers/config-file.js';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';

after(killAll);
const f = useFixtures();

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

test('the batch line carries x-request-id and the trace id; a 1 MB request_id is cut to 256 characters and its length', async () => {
  const agent = await f.agent({ name: 'a' });
  const file = configFile({ server: { port: 0 }, log_level: 'info', backends: { a: { url: agent.url } }, routes: [{ name: 'd', backend: 'a' }] });
  f.defer(() => file.remove());
  const run = runCli(['--config', file.path]);
  const summary = await run.logLine((l) => Array.isArray(l.listen));
  const url = (summary.listen as string[])[0]!;

  const longId = 'r'.repeat(1024 * 1024);
  const res = await fetch(`${url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'trace-me-1', traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
    body: JSON.stringify({ request_id: longId, inputs: [mkInput(1)] }),
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  const line = await run.logLine((l) => l.msg === 'batch');
  assert.equal(line.x_request_id, 'trace-me-1');
  assert.equal(line.trace_id, TRACE_ID);
  assert.equal(line.request_id, `${'r'.repeat(256)}...`);
  assert.equal(line.request_id_chars, longId.length);
  // The backend got the same x-request-id the line names.
  assert.equal(agent.requestsTo('/v1/responses')[0]!.headers['x-request-id'], 'trace-me-1');

  // Without correlation headers the line names the generated ones the backend calls carried.
  const res2 = await fetch(`${url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ request_id: 'short', inputs: [mkInput(1)] }) });
  assert.equal(res2.status, 200);
  await res2.arrayBuffer();
  const line2 = await run.logLine((l) => l.msg === 'batch' && l.request_id === 'short');
  const sent = agent.requestsTo('/v1/responses')[1]!.headers;
  assert.equal(line2.x_request_id, sent['x-request-id']);
  assert.equal(line2.trace_id, String(sent.traceparent).slice(3, 35));
  assert.equal(line2.request_id_chars, undefined);
  run.child.kill('SIGTERM');
  await run.exit;
});
