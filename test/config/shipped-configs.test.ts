/**
 * The config files shipped in config/ load as the gateway loads them, so the README's and the Dockerfile's
 * commands work as written: the demo's, compose's, the single-container default (with and without AGENT_URL)
 * and the annotated example.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfigFile } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';

test('every shipped config loads without problems or warnings', () => {
  // Compose passes GATEWAY_ADMIN_TOKEN (its admin listener is beyond loopback, so a token is required).
  const env: Record<string, Record<string, string>> = { 'config/gateway.docker.yaml': { GATEWAY_ADMIN_TOKEN: 't' } };
  // The demo configs keep their loopback admin listener without a token (the console opens at once), and say so.
  const untokened = new Set(['config/gateway.yaml', 'config/examples/virtual-agents.yaml']);
  const warned = (config: Parameters<typeof configWarnings>[0]): string[] => configWarnings(config).map((w) => w.path);
  for (const file of ['config/gateway.yaml', 'config/gateway.docker.yaml', 'config/gateway.standalone.yaml']) {
    const config = loadConfigFile(file, env[file] ?? {});
    assert.deepEqual(warned(config), untokened.has(file) ? ['admin.token'] : [], file);
  }
  assert.ok(loadConfigFile('config/examples/full.yaml', { GATEWAY_ADMIN_TOKEN: 't', QWEN_TOKEN: 'q' }));
  const agents = loadConfigFile('config/examples/virtual-agents.yaml', {});
  assert.deepEqual(warned(agents), ['admin.token'], 'config/examples/virtual-agents.yaml');
  assert.deepEqual(Object.keys(agents.agents), ['ab-kitchen', 'gen-sampling'], 'the virtual agents example serves two agents');
});

test('the single-container config reads its backend from AGENT_URL, with a default for docker run alone', () => {
  const dflt = loadConfigFile('config/gateway.standalone.yaml', {});
  assert.deepEqual(dflt.backends.agent!.urls, ['http://host.docker.internal:8101']);
  assert.equal(dflt.server.host, '0.0.0.0');
  assert.equal(dflt.state.redis, undefined, 'no Redis needed');
  const set = loadConfigFile('config/gateway.standalone.yaml', { AGENT_URL: 'http://10.0.0.5:8001/' });
  assert.deepEqual(set.backends.agent!.urls, ['http://10.0.0.5:8001']);
});
