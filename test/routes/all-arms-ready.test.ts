/**
 * A split that refuses to run one-armed (docs/routing.md#a-split-that-needs-every-arm): with `all_arms_ready: true`,
 * the agent's /health and the gateway root's answer 503 naming the arm while it has no ready replica, and 200 once
 * it is up; without the key a split with one ready arm is ready (any ready backend serves the route). The config
 * key is refused on a route that is not a split. Pure part: armsLacking.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfigText } from '../../src/config/load.js';
import { armsLacking, compileAgents } from '../../src/routing/agents.js';
import { http } from '../helpers/config-file.js';
import { oneBackend, useFixtures } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/wait.js';

const f = useFixtures();

test('all_arms_ready: the agent path and the root are 503 naming the arm while it is down, 200 once it is up', async () => {
  const [a, b] = await Promise.all([f.agent({ name: 'a' }), f.agent({ name: 'b', behaviour: { health: 503 } })]);
  const g = await f.gateway(oneBackend({ a: a.url, b: b.url }, {
    probe_interval_s: 0.05,
    route: { backend: 'a' },
    agents: {
      lab: { routes: [{ name: 'ab', split: { a: 1, b: 1 }, all_arms_ready: true }] },
      loose: { routes: [{ name: 'ab', split: { a: 1, b: 1 } }] },
    },
  }));
  await waitFor('b probed not ready', async () => (await http(`${g.url}/agents/lab/health`)).status === 503);
  const detail = 'not ready: a split with all_arms_ready has an arm with no ready replica (lab/ab: b)';
  assert.deepEqual((await http(`${g.url}/agents/lab/health`)).json, { detail, code: 'GATEWAY_ERR_NOT_READY' });
  // The root is what BENCH and load balancers check: it says the same.
  const root = await http(`${g.url}/health`);
  assert.equal(root.status, 503);
  assert.deepEqual(root.json, { detail, code: 'GATEWAY_ERR_NOT_READY' });
  // Without the key, one ready arm serves the split: that agent stays ready.
  assert.deepEqual((await http(`${g.url}/agents/loose/health`)).json, { status: 'ready' });
  b.setBehaviour({});
  await waitFor('b ready again', async () => (await http(`${g.url}/agents/lab/health`)).status === 200);
  assert.deepEqual((await http(`${g.url}/agents/lab/health`)).json, { status: 'ready' });
  assert.deepEqual((await http(`${g.url}/health`)).json, { status: 'ready' });
});

test('armsLacking names each missing arm of every all_arms_ready split, the root agent unprefixed', () => {
  const cfg = parseConfigText([
    'backends: { a: { url: "http://127.0.0.1:1" }, b: { url: "http://127.0.0.1:2" }, c: { url: "http://127.0.0.1:3" } }',
    'routes: [{ name: s1, split: { a: 1, b: 1, c: 1 }, all_arms_ready: true, match: { extra_keys.m: 1 } }, { name: s2, split: { a: 1, b: 1 } }]',
    'agents: { lab: { routes: [{ name: t, split: { b: 1, c: 1 }, all_arms_ready: true }] } }',
  ].join('\n'), 'x.yaml', {});
  const agents = compileAgents(cfg);
  const ready = (x: string): boolean => x === 'a';
  assert.deepEqual(armsLacking(agents.root!, ready), ['s1: b', 's1: c']);
  assert.deepEqual(armsLacking(agents.virtual.get('lab')!, ready), ['lab/t: b', 'lab/t: c']);
  assert.deepEqual(armsLacking(agents.root!, () => true), []);
});

test('all_arms_ready on a route that is not a split is refused, naming the key', () => {
  assert.throws(
    () => parseConfigText('backends: { a: { url: "http://127.0.0.1:1" } }\nroutes: [{ name: d, backend: a, all_arms_ready: true }]', 'x.yaml', {}),
    /all_arms_ready applies to a split route only/,
  );
});
