/**
 * `clients.<name>.agents` (docs/limits-and-edges.md#which-agents-a-key-may-use): a key limited to some agents
 * is refused the others' endpoints with 403 and a code, on the raw batch front and on fastify's routes alike;
 * a list naming an agent the config lacks is a config error at its path.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { useFixtures } from '../helpers/fixtures.js';
import { mkInput } from '../helpers/gateway.js';

const f = useFixtures();
const KEY_A = 'ka-0123456789abcdef0123';
const KEY_B = 'kb-0123456789abcdef0123';

test('a key limited to its agents: 403 GATEWAY_ERR_AGENT_FORBIDDEN elsewhere, served on its own', async () => {
  const agent = await f.agent({ name: 'x' });
  const gw = await f.gateway({
    backends: { x: { url: agent.url } },
    routes: [{ name: 'd', backend: 'x' }],
    agents: { kitchen: { routes: [{ name: 'k', backend: 'x' }] }, garage: { routes: [{ name: 'g', backend: 'x' }] } },
    clients: { a: { key: KEY_A, agents: ['kitchen'] }, b: { key: KEY_B } },
  });
  const batch = JSON.stringify({ request_id: 'r', inputs: [mkInput(1)] });
  const [asA, asB] = [KEY_A, KEY_B].map((key) => ({ method: 'POST', body: batch, headers: { authorization: `Bearer ${key}` } }));
  assert.equal((await gw.call('/agents/kitchen/v1/responses', asA)).status, 200);
  for (const path of ['/agents/garage/v1/responses', '/v1/responses', '/agents/garage/v1/responses?q=1', '/v1/responses?q=1']) {
    const res = await gw.call(path, asA);
    assert.equal(res.status, 403, path);
    const json = res.json as { code: string; detail: string };
    assert.equal(json.code, 'GATEWAY_ERR_AGENT_FORBIDDEN');
    assert.match(json.detail, /client "a" may not use agent "(garage|default)" \(clients\.a\.agents: kitchen\)/);
  }
  // fastify's other agent endpoints too; the key-less health check of the default agent stays open.
  assert.equal((await fetch(`${gw.url}/agents/garage/v1/info`, { headers: { 'x-api-key': KEY_A } })).status, 403);
  assert.equal((await fetch(`${gw.url}/agents/kitchen/v1/info`, { headers: { 'x-api-key': KEY_A } })).status, 200);
  assert.equal((await fetch(`${gw.url}/health`)).status, 200);
  // A key without a list reaches every agent.
  assert.equal((await gw.call('/agents/garage/v1/responses', asB)).status, 200);
  assert.equal((await gw.call('/v1/responses', asB)).status, 200);
  // Only the two allowed batches reached the backend.
  assert.equal(agent.requestsTo('/v1/responses').length, 3);
});

test('clients.<name>.agents naming an unknown agent is a config error at its path', () => {
  const text = [
    'backends:', '  x: { url: http://127.0.0.1:1 }',
    'agents:', '  kitchen: { routes: [{ name: k, backend: x }] }',
    'clients:', `  a: { key: ${KEY_A}, agents: [kitchen, default, garage] }`, '',
  ].join('\n');
  assert.throws(() => parseConfigText(text, 'c.yaml', {}), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /clients\.a\.agents\[1\].*unknown agent "default"/);
    assert.match(err.message, /clients\.a\.agents\[2\].*unknown agent "garage" \(agents: kitchen\)/);
    return true;
  });
});
