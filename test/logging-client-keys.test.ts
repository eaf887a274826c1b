/**
 * Client keys never reach a log line or an admin view (docs/operations.md#client-keys and docs/operations.md#logs): a whole run of a gateway
 * with clients (start summary and config warnings, batches on both fronts with keys in the address and in
 * headers, wrong keys, unknown paths, a key pasted twice, an invalid body, an over-limit batch, app.inject, the
 * admin config view and a reload that changes a key) is captured line by line at the most verbose level, and
 * no key text appears in any of it. The lines that say where a key was show REDACTED there.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { listenAdmin } from '../src/admin-app.js';
import { buildApp } from '../src/app.js';
import { loadConfigFile } from '../src/config/load.js';
import { loggerOptions } from '../src/logging.js';
import { configFile, http, type ConfigFile } from './helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from './helpers/fake-agent.js';
import { mkInput } from './helpers/gateway.js';
import { waitFor } from './helpers/wait.js';
import { oneBackend } from './helpers/fixtures.js';

const KEY_A = 'KeyAlpha-5c1e0f7b9d2a4e63';
const KEY_B = 'KeyBravo-0a8d3c6f1b9e2d47';
const SHORT = 'Zq9shrtK';
const NEW_A = 'KeyAlphaNew-7e2b9a0c4d1f'; // after the reload
const WRONG = ['WrongKey-33d1e8a0b7c2f9', `${KEY_A}0`, KEY_A.slice(0, -2)];
const SECRETS = [KEY_A, KEY_B, SHORT, NEW_A, ...WRONG];
const TOKEN = 'admin-token-for-the-log-test';

const lines: string[] = [];
const stream = { write: (l: string): void => void lines.push(l) };
let app: FastifyInstance;
let url: string;
let adminUrl: string;
let agent: FakeAgent;
let file: ConfigFile;

function config(keyA: string): Record<string, unknown> {
  return oneBackend({ a: agent }, { admin: { listen: '127.0.0.1:0', token: TOKEN }, clients: {
      'team-a': { key: keyA, max_candidates_per_minute: 5, max_wait_s: 0 },
      'team-b': { key: KEY_B },
      'team-c': { key: SHORT },
    } });
}

before(async () => {
  agent = await startFakeAgent({ name: 'a' });
  file = configFile(config(KEY_A));
  app = await buildApp({ config: loadConfigFile(file.path, {}), configPath: file.path, logger: { ...loggerOptions('trace'), stream }, defaultMetrics: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  url = `http://127.0.0.1:${typeof addr === 'object' && addr !== null ? addr.port : 0}`;
  adminUrl = (await listenAdmin(app)) ?? '';
});
after(async () => {
  await app.close();
  await agent.close();
  file.remove();
});

const parsed = (): Record<string, unknown>[] => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
const batch = (id: string, n = 1): object => ({ request_id: id, inputs: [mkInput(1, { num_outputs: n })] });

test('a run with keys in the address, in headers and wrong keys logs no key text, anywhere', async () => {
  const asks: [string, { method?: string; body?: string | object; headers?: Record<string, string> }][] = [
    [`/k/${KEY_A}/v1/responses`, { method: 'POST', body: batch('a1') }],
    [`/k/${KEY_B}/v1/responses?via=fastify`, { method: 'POST', body: batch('b1') }],
    ['/v1/responses', { method: 'POST', body: batch('b2'), headers: { authorization: `Bearer ${KEY_B}` } }],
    ['/v1/responses', { method: 'POST', body: batch('b3'), headers: { 'x-api-key': KEY_B } }],
    [`/k/${KEY_A}/v1/responses`, { method: 'POST', body: batch('over', 9) }],
    [`/k/${KEY_A}/v1/responses`, { method: 'POST', body: '{"request_id": 1}' }],
    [`/k/${KEY_A}/v1/responses?via=fastify`, { method: 'POST', body: '{"nope' }],
    [`/k/${KEY_A}/v1/info`, {}],
    [`/k/${KEY_A}/nope?x=1`, {}],
    [`/k/${KEY_A}/k/${KEY_B}/v1/info`, {}],
    [`/k/${SHORT}/health`, {}],
    [`/k/${KEY_A}/v1/coaching`, { method: 'POST', body: { run_id: 'r' } }],
    [`/k/${KEY_A}/v1/info`, { headers: { 'x-api-key': KEY_B } }],
    ...WRONG.flatMap((w): [string, { method?: string; body?: object; headers?: Record<string, string> }][] => [
      [`/k/${w}/v1/responses`, { method: 'POST', body: batch('w1') }],
      [`/k/${w}/v1/info`, {}],
      [`/k/${w}/health`, {}],
      ['/v1/responses', { method: 'POST', body: batch('w2'), headers: { authorization: `Bearer ${w}` } }],
      ['/v1/info', { headers: { 'x-api-key': w } }],
      [`/k/${w}/gateway/config`, {}],
    ]),
  ];
  const statuses: number[] = [];
  for (const [path, init] of asks) statuses.push((await http(`${url}${path}`, init)).status);
  statuses.push((await app.inject({ method: 'GET', url: `/k/${KEY_A}/missing-route` })).statusCode);
  statuses.push((await app.inject({ method: 'GET', url: `/k/${WRONG[0]}/v1/info` })).statusCode);

  const view = await http(`${adminUrl}/gateway/config`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(view.status, 200);
  const metrics = await http(`${url}/metrics`);
  file.write(config(NEW_A));
  const reload = await http(`${adminUrl}/gateway/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(reload.status, 200, reload.text);
  statuses.push((await http(`${url}/k/${NEW_A}/v1/responses`, { method: 'POST', body: batch('after') })).status);
  statuses.push((await http(`${url}/k/${KEY_A}/v1/responses`, { method: 'POST', body: batch('old-key') })).status);
  assert.equal(statuses.at(-1), 401, 'the old key is refused after the reload');
  // fastify writes its line once the answer is sent: wait for one line per 4xx answer.
  const answered4xx = statuses.filter((s) => s >= 400 && s < 500 && s !== 422).length;
  await waitFor('a line for every 4xx answer', () => parsed().filter((l) => l.msg === 'client error answered').length >= answered4xx);

  const text = lines.join('\n');
  for (const secret of SECRETS) {
    assert.ok(!text.includes(secret), `a log line holds ${secret}: ${lines.find((l) => l.includes(secret))}`);
    for (const [name, shown] of [['the admin config view', view.text], ['/metrics', metrics.text], ['the reload answer', reload.text]]) {
      assert.ok(!shown!.includes(secret), `${name} holds ${secret}`);
    }
  }

  // The run was logged: the lines that would have held keys are there, with REDACTED in their place.
  const all = parsed();
  const paths = all.filter((l) => l.msg === 'client error answered').map((l) => `${String(l.status)} ${String(l.path)} ${String(l.client)}`);
  for (const want of [
    '401 /k/REDACTED/v1/responses unauthorized', // the raw front
    '401 /k/REDACTED/v1/info unauthorized', // fastify
    '404 /k/REDACTED/nope?x=1 team-a',
    '404 /k/REDACTED/k/REDACTED/v1/info team-a',
    '401 /k/REDACTED/health unauthorized',
    '404 /k/REDACTED/missing-route team-a', // app.inject
  ]) {
    assert.ok(paths.includes(want), `no line "${want}" among:\n${paths.join('\n')}`);
  }
  const summary = all.find((l) => String(l.msg).startsWith('magma-gateway ') && 'listen' in l);
  assert.deepEqual(summary?.clients, ['team-a (5 candidates/min, waits up to 0 s)', 'team-b (no limits)', 'team-c (no limits)']);
  assert.ok(all.some((l) => l.path === 'clients.team-c.key' && String(l.msg).includes('shorter than 16')), 'the short-key warning');
  assert.ok(all.some((l) => l.msg === 'batch over its client limits' && l.client === 'team-a'));
  assert.ok(all.some((l) => l.msg === 'batch' && l.client === 'team-b'));
  assert.ok(all.some((l) => l.msg === 'config reloaded'));
  assert.ok(all.some((l) => l.msg === 'invalid AgentRequest'));
});
