/**
 * Config loading: every kind of bad file stops with a message naming file, path in the file and line:column.
 * YAML is written as arrays of lines so that line numbers in assertions can be read off the array index + 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfigFile, parseConfigText } from '../../src/config/load.js';

const SRC = 'test.yaml';

function yaml(...lines: string[]): string {
  return lines.join('\n') + '\n';
}

/** The smallest valid file; tests append or replace lines. */
const BACKENDS = ['backends:', '  qwen: { url: http://127.0.0.1:8001 }', '  gpt: { url: http://127.0.0.1:8002 }'];

function errorOf(text: string, env: Record<string, string> = {}): ConfigError {
  try {
    parseConfigText(text, SRC, env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  assert.fail('expected a ConfigError');
}

/** The message has a line `test.yaml:<line>:<col>: <path>: ...<fragment>...`. */
function assertProblem(err: ConfigError, where: string, path: string, fragment: string): void {
  const line = err.message.split('\n').find((l) => l.includes(`${SRC}:${where}: ${path}: `));
  assert.ok(line !== undefined, `no problem at ${where} ${path} in:\n${err.message}`);
  assert.ok(line.includes(fragment), `"${fragment}" missing in: ${line}`);
}

test('an unknown top-level key is named with its line and column', () => {
  const err = errorOf(yaml('sever: { port: 1 }', ...BACKENDS, 'routes:', '  - { name: d, backend: qwen }'));
  assertProblem(err, '1:1', 'sever', 'unknown key "sever"');
});

test('a removed key is refused with what replaces it, at its line (server.heap_growing_percent: the gateway sets it, node\'s flag overrides)', () => {
  const err = errorOf(yaml('server:', '  port: 8888', '  heap_growing_percent: 150', ...BACKENDS, 'routes:', '  - { name: d, backend: qwen }'));
  assertProblem(err, '3:3', 'server.heap_growing_percent', 'key "heap_growing_percent" was removed: the gateway sets a V8 heap growth of 150% itself; for another, pass --heap-growing-percent=N on node\'s command line');
});

test('server.memory_reclaim_share is refused at its line: nothing replaces it', () => {
  const err = errorOf(yaml('server:', '  memory_reclaim_share: 0.25', ...BACKENDS, 'routes:', '  - { name: d, backend: qwen }'));
  assertProblem(err, '2:3', 'server.memory_reclaim_share', 'key "memory_reclaim_share" was removed: nothing: a finished batch\'s large bodies and answers are given back to the system when it ends, with no collection forced');
});

test('an unknown key in a backend is named with its path and line', () => {
  const err = errorOf(
    yaml(...BACKENDS, '  mistral:', '    url: http://127.0.0.1:8003', '    timeout: 5', 'routes:', '  - { name: d, backend: qwen }'),
  );
  assertProblem(err, '6:5', 'backends.mistral.timeout', 'unknown key "timeout"');
});

test('an unknown key in a route is named with its path and line', () => {
  const err = errorOf(yaml(...BACKENDS, 'routes:', '  - name: d', '    backend: qwen', '    fallbacks: [gpt]'));
  assertProblem(err, '7:5', 'routes[0].fallbacks', 'unknown key "fallbacks"');
});

test('an unknown backend in a split is named at the arm', () => {
  const err = errorOf(
    yaml(...BACKENDS, 'routes:', '  - name: ab', '    match: { extra_keys.ab: true }', '    split: { qwenx: 90, gpt: 10 }', '  - { name: d, backend: qwen }'),
  );
  assertProblem(err, '7:14', 'routes[0].split.qwenx', 'unknown backend "qwenx" (defined: qwen, gpt)');
});

test('an unknown backend in backend, ensemble, fallback and shadow is named at each reference', () => {
  const err = errorOf(
    yaml(
      ...BACKENDS,
      'routes:',
      '  - name: e',
      '    match: { extra_keys.e: true }',
      '    ensemble: { qwen: 1, llama: 1 }',
      '  - name: d',
      '    backend: claude',
      '    fallback: [gpt, mistral]',
      '    shadow: [phi]',
    ),
  );
  assertProblem(err, '7:26', 'routes[0].ensemble.llama', 'unknown backend "llama"');
  assertProblem(err, '9:14', 'routes[1].backend', 'unknown backend "claude"');
  assertProblem(err, '10:21', 'routes[1].fallback[1]', 'unknown backend "mistral"');
  assertProblem(err, '11:14', 'routes[1].shadow[0]', 'unknown backend "phi"');
  assert.equal(err.issues.length, 4);
});

test('a config without a catch-all route is refused at routes', () => {
  const err = errorOf(yaml(...BACKENDS, 'routes:', '  - name: only', '    match: { instruction_type: env }', '    backend: qwen'));
  assertProblem(err, '4:1', 'routes', 'no catch-all route');
});

test('routes after the catch-all are refused as unreachable', () => {
  const err = errorOf(
    yaml(...BACKENDS, 'routes:', '  - name: all', '    backend: qwen', '  - name: env', '    match: { instruction_type: env }', '    backend: gpt'),
  );
  assertProblem(err, '7:5', 'routes[1]', 'unreachable: the catch-all route "all" (routes[0])');
});

test('a missing environment variable is named with the key path and line', () => {
  const err = errorOf(
    yaml(
      'backends:',
      '  gpt:',
      '    url: http://127.0.0.1:8002',
      '    headers:',
      '      authorization: "Bearer ${GPT_TOKEN}"',
      'routes:',
      '  - { name: d, backend: gpt }',
    ),
  );
  assertProblem(err, '5:22', 'backends.gpt.headers.authorization', 'environment variable GPT_TOKEN is not set');
  assert.equal(err.issues.length, 1);
});

test('a backend with both url and urls is refused at the backend', () => {
  const err = errorOf(
    yaml('backends:', '  qwen:', '    url: http://a:1', '    urls: [http://b:1]', 'routes:', '  - { name: d, backend: qwen }'),
  );
  assertProblem(err, '2:3', 'backends.qwen', 'exactly one of "url" or "urls"');
});

test('a backend with neither url nor urls is refused at the backend', () => {
  const err = errorOf(yaml('backends:', '  qwen: { timeout_s: 5 }', 'routes:', '  - { name: d, backend: qwen }'));
  assertProblem(err, '2:3', 'backends.qwen', 'exactly one of "url" or "urls"');
});

test('a duplicate route name is refused at the second name', () => {
  const err = errorOf(
    yaml(...BACKENDS, 'routes:', '  - name: a', '    match: { tools: x }', '    backend: qwen', '  - name: a', '    backend: gpt'),
  );
  assertProblem(err, '8:11', 'routes[1].name', 'route name "a" is already used by routes[0]');
});

test('a share of zero is refused at the member', () => {
  const err = errorOf(yaml(...BACKENDS, 'routes:', '  - name: d', '    ensemble: { qwen: 1, gpt: 0 }'));
  assertProblem(err, '6:31', 'routes[0].ensemble.gpt', 'greater than 0');
});

test('an unknown match key is refused at the key', () => {
  const err = errorOf(
    yaml(...BACKENDS, 'routes:', '  - name: a', '    match: { attribute.scenario: x }', '    backend: qwen', '  - { name: d, backend: qwen }'),
  );
  assertProblem(err, '6:14', 'routes[0].match["attribute.scenario"]', 'unknown match key');
});

test('an unknown operator is refused at the operator', () => {
  const err = errorOf(
    yaml(...BACKENDS, 'routes:', '  - name: a', '    match: { tools: { has: x } }', '    backend: qwen', '  - { name: d, backend: qwen }'),
  );
  assertProblem(err, '6:23', 'routes[0].match.tools.has', 'unknown key "has"');
  assert.equal(err.issues.length, 1);
});

test('an invalid regex and an unclosed glob class are refused at the operator', () => {
  const err = errorOf(
    yaml(
      ...BACKENDS,
      'routes:',
      '  - name: a',
      '    match: { extra_keys.v: { regex: "(" }, attributes.s: { glob: "[ab" } }',
      '    backend: qwen',
      '  - { name: d, backend: qwen }',
    ),
  );
  assertProblem(err, '6:37', 'routes[0].match["extra_keys.v"].regex', 'invalid regex');
  assertProblem(err, '6:66', 'routes[0].match["attributes.s"].glob', 'invalid glob');
});

test("a match on the gateway's own memory key is refused", () => {
  const err = errorOf(
    yaml(...BACKENDS, 'routes:', '  - name: a', '    match: { memory._gateway.backend: qwen }', '    backend: qwen', '  - { name: d, backend: qwen }'),
  );
  assertProblem(err, '6:14', 'routes[0].match["memory._gateway.backend"]', "gateway's own memory key");
});

test('several problems are all reported, in file order', () => {
  const err = errorOf(yaml('extra: 1', 'backends:', '  qwen: {}', 'routes:', '  - { name: d, backend: nope }'));
  assert.deepEqual(
    err.issues.map((i) => [i.path, i.line]),
    [
      ['extra', 1],
      ['backends.qwen', 3],
      ['routes[0].backend', 5],
    ],
  );
  assert.match(err.message, /^invalid config file test\.yaml \(3 problems\):/);
});

test('a YAML syntax error is reported with its line and column', () => {
  const err = errorOf(yaml('backends:', '  qwen: { url: http://a:1', 'routes: []'));
  assert.equal(err.issues[0]!.path, '(yaml)');
  assert.match(err.message, /test\.yaml:\d+:\d+: \(yaml\): /);
});

test('an unquoted ${VAR} inside a flow map gets a hint to quote it', () => {
  const err = errorOf(yaml('server: { port: ${PORT} }'), { PORT: '1' });
  assert.match(err.message, /test\.yaml:1:18: \(yaml\): .*write "\$\{VAR\}" in quotes/);
});

test('an empty file is refused with a message saying so', () => {
  const err = errorOf('');
  assertProblem(err, '1:1', '(root)', 'the file is empty');
});

test('a file that cannot be read is a ConfigError naming the file', () => {
  assert.throws(() => loadConfigFile('/nonexistent/gateway.yaml', {}), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /cannot read config file \/nonexistent\/gateway\.yaml/);
    return true;
  });
});
