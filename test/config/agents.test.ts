/**
 * `agents:` in the config (src/config/schema.ts, route-problems.ts, agents.ts; docs/routing.md#virtual-agents): each
 * agent's name, identity, memory key and routes are checked like the top level's, with locations under
 * `agents.<name>`; the top-level routes may be left out when agents are configured.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentTables } from '../../src/config/agents.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { configWarnings } from '../../src/config/warnings.js';

const SRC = 'a.yaml';
const yaml = (...lines: string[]): string => lines.join('\n') + '\n';
const BACKENDS = ['backends:', '  qwen: { url: http://127.0.0.1:8001 }', '  gpt: { url: http://127.0.0.1:8002 }'];
const ROUTES = ['routes:', '  - { name: d, backend: qwen }'];

function problems(text: string): string[] {
  try {
    parseConfigText(text, SRC, {});
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.line}:${i.column} ${i.path}: ${i.message}`);
    throw err;
  }
  assert.fail('expected a ConfigError');
}

test('virtual agents load with their identity, memory key and routes; defaults come from the agent name and the top level', () => {
  const config = parseConfigText(
    yaml(
      ...BACKENDS,
      ...ROUTES,
      'memory_key: _gw',
      'agents:',
      '  ab-kitchen:',
      '    agent: { agent_id: kitchen-ab, agent_version: "1.0" }',
      '    memory_key: _gw_kitchen',
      '    routes:',
      '      - { name: ab, split: { qwen: 1, gpt: 1 } }',
      '  lab:',
      '    routes: [{ name: main, backend: gpt }]',
    ),
    SRC,
    {},
  );
  assert.deepEqual(
    agentTables(config).map((t) => [t.name, t.virtual, t.agentId, t.agentVersion, t.memoryKey, t.routes.map((r) => r.name)]),
    [
      ['default', false, 'magma-gateway', undefined, '_gw', ['d']],
      ['ab-kitchen', true, 'kitchen-ab', '1.0', '_gw_kitchen', ['ab']],
      ['lab', true, 'lab', undefined, '_gw', ['main']],
    ],
  );
  assert.ok(Object.isFrozen(config.agents['ab-kitchen']!.routes), 'frozen like the rest of the config');
});

test('a config without agents has none, and the default agent alone', () => {
  const config = parseConfigText(yaml(...BACKENDS, ...ROUTES), SRC, {});
  assert.deepEqual(config.agents, {});
  assert.deepEqual(agentTables(config).map((t) => t.name), ['default']);
});

test('an agent name follows the name rule of backends and routes', () => {
  const got = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', '  "ab kitchen": { routes: [{ name: m, backend: qwen }] }', '  "42": { routes: [{ name: m, backend: qwen }] }'));
  assert.deepEqual(got, [
    '7:3 agents["ab kitchen"]: use letters, digits, "_", "." or "-"',
    '8:3 agents["42"]: a name needs at least one non-digit character',
  ]);
});

test('"default" is refused as an agent name: it is the root agent\'s label', () => {
  const got = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', '  default: { routes: [{ name: m, backend: qwen }] }'));
  assert.deepEqual(got, ['7:3 agents.default: "default" is the metric label of the top-level routes (the agent at /): choose another name']);
});

test('an agent name longer than 64 characters is refused', () => {
  const got = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', `  ${'k'.repeat(65)}: { routes: [{ name: m, backend: qwen }] }`));
  assert.deepEqual(got, [`7:3 agents.${'k'.repeat(65)}: at most 64 characters (it is a URL path segment)`]);
});

test('an agent named __proto__ is refused rather than lost', () => {
  const got = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', '  __proto__: { routes: [{ name: m, backend: gpt }] }'));
  assert.deepEqual(got, ['7:3 agents.__proto__: "__proto__" is reserved: choose another name']);
});

test('a name of only dots is refused: it is no usable path segment', () => {
  const got = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', '  "..": { routes: [{ name: m, backend: qwen }] }'));
  assert.deepEqual(got, ['7:3 agents[".."]: a name of only dots is not a usable URL path segment']);
});

test('an agent\'s routes are checked like the top level\'s, located under agents.<name>', () => {
  const got = problems(
    yaml(
      ...BACKENDS,
      ...ROUTES,
      'agents:',
      '  ab-kitchen:',
      '    routes:',
      '      - { name: k, backend: qwenn, match: { instruction_type: env } }',
      '      - { name: k, split: { qwen: 1, gtp: 1 }, fallback: [gpt, gpt] }',
    ),
  );
  assert.deepEqual(got, [
    '9:29 agents.ab-kitchen.routes[0].backend: unknown backend "qwenn" (defined: qwen, gpt)',
    '10:17 agents.ab-kitchen.routes[1].name: route name "k" is already used by agents.ab-kitchen.routes[0]',
    '10:38 agents.ab-kitchen.routes[1].split.gtp: unknown backend "gtp" (defined: qwen, gpt)',
    '10:64 agents.ab-kitchen.routes[1].fallback[1]: backend "gpt" is listed twice',
  ]);
});

test('a misspelt key inside an agent gets the nearest known key', () => {
  const got = problems(
    yaml(...BACKENDS, ...ROUTES, 'agents:', '  lab:', '    memory_kye: _x', '    rutes: [{ name: m, backend: qwen, fallbak: [] }]'),
  );
  assert.deepEqual(got, [
    '8:5 agents.lab.routes: required: the agent\'s routes, a list like the top-level "routes"',
    '8:5 agents.lab.memory_kye: unknown key "memory_kye" (did you mean "memory_key"?)',
    '9:5 agents.lab.rutes: unknown key "rutes" (did you mean "routes"?)',
  ]);
});

test('an agent\'s match may not read its own memory key', () => {
  const got = problems(
    yaml(
      ...BACKENDS,
      ...ROUTES,
      'agents:',
      '  lab:',
      '    memory_key: _lab',
      '    routes:',
      '      - { name: m, backend: qwen, match: { memory._lab.route: x } }',
      '      - { name: c, backend: qwen }',
    ),
  );
  assert.equal(got.length, 1);
  assert.match(got[0]!, /^10:44 agents\.lab\.routes\[0\]\.match\["memory\._lab\.route"\]: .*reads the gateway's own memory key "_lab"/);
});

test('the top-level routes may be left out when agents are configured, not otherwise', () => {
  const config = parseConfigText(yaml(...BACKENDS, 'agents:', '  lab: { routes: [{ name: m, backend: qwen }] }'), SRC, {});
  assert.deepEqual(config.routes, []);
  assert.deepEqual(agentTables(config).map((t) => t.name), ['lab']);
  assert.deepEqual(problems(yaml(...BACKENDS)), [
    '1:1 routes: no routes: give the top-level "routes" (the agent at /) or an "agents" section naming at least one agent',
  ]);
  assert.deepEqual(problems(yaml(...BACKENDS, 'routes: []', 'agents: {}')), [
    '4:1 routes: no routes: give the top-level "routes" (the agent at /) or an "agents" section naming at least one agent',
  ]);
});

test('an agent with no routes is refused', () => {
  const got = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', '  lab: { routes: [] }'));
  assert.equal(got.length, 1);
  assert.match(got[0]!, /^7:10 agents\.lab\.routes: .*>=1/);
});

test('warnings name the agent\'s route location', () => {
  const config = parseConfigText(
    yaml(...BACKENDS, ...ROUTES, 'agents:', '  lab: { routes: [{ name: m, backend: qwen, fallback: [qwen] }] }'),
    SRC,
    {},
  );
  assert.deepEqual(configWarnings(config).map((w) => w.path), ['agents.lab.routes[0].fallback[0]']);
});

test('an agent\'s route table needs its own catch-all, last', () => {
  const got = problems(
    yaml(...BACKENDS, ...ROUTES, 'agents:', '  lab:', '    routes:', '      - { name: c, backend: qwen }', '      - { name: e, backend: gpt, match: { instruction_type: env } }'),
  );
  assert.deepEqual(got, [
    '10:9 agents.lab.routes[1]: unreachable: the catch-all route "c" (agents.lab.routes[0]) before it takes every input; the catch-all must be the last route',
  ]);
  const none = problems(yaml(...BACKENDS, ...ROUTES, 'agents:', '  lab: { routes: [{ name: e, backend: gpt, match: { instruction_type: env } }] }'));
  assert.deepEqual(none, ['7:10 agents.lab.routes: no catch-all route: the last route must have no "match", so that every input has a route']);
});
