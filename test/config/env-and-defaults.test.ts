/**
 * What a valid file becomes: `${VAR}` substitution, schema defaults, the frozen result, and the shipped configs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ConfigError, deepFreeze, loadConfigFile, parseConfigText } from '../../src/config/load.js';

function yaml(...lines: string[]): string {
  return lines.join('\n') + '\n';
}

const MINIMAL = yaml('backends:', '  qwen: { url: http://127.0.0.1:8001 }', 'routes:', '  - { name: d, backend: qwen }');

function withBackendLine(line: string): string {
  return yaml('backends:', '  qwen:', '    url: http://127.0.0.1:8001', line, 'routes:', '  - { name: d, backend: qwen }');
}

/** From dist/test/config/ back to the repository root. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('${VAR} in a string value is replaced from the environment', () => {
  const c = parseConfigText(withBackendLine('    headers: { authorization: "Bearer ${TOK}" }'), 't.yaml', { TOK: 's3cret' });
  assert.equal(c.backends.qwen!.headers.authorization, 'Bearer s3cret');
});

test('${VAR:-default} uses the default when the variable is unset', () => {
  const c = parseConfigText(withBackendLine('    headers: { x-tier: "${TIER:-gold}" }'), 't.yaml', {});
  assert.equal(c.backends.qwen!.headers['x-tier'], 'gold');
});

test('${VAR:-default} uses the default when the variable is empty, as the shell does', () => {
  const c = parseConfigText(withBackendLine('    headers: { x-tier: "${TIER:-gold}" }'), 't.yaml', { TIER: '' });
  assert.equal(c.backends.qwen!.headers['x-tier'], 'gold');
});

test('$${ is a literal ${', () => {
  const c = parseConfigText(withBackendLine('    headers: { x-raw: "a$${B}c" }'), 't.yaml', {});
  assert.equal(c.backends.qwen!.headers['x-raw'], 'a${B}c');
});

test('a substituted value becomes a number where the schema expects one, quoted or not', () => {
  const text = yaml('server:', '  port: ${PORT}', '  body_limit_mb: "${LIMIT}"', MINIMAL);
  const c = parseConfigText(text, 't.yaml', { PORT: '9000', LIMIT: '2.5' });
  assert.equal(c.server.port, 9000);
  assert.equal(c.server.body_limit_mb, 2.5);
});

test('a substituted value becomes a boolean where the schema expects one', () => {
  const text = yaml('backends:', '  qwen: { url: http://a:1 }', 'routes:', '  - name: d', '    backend: qwen', '    sticky: ${STICKY}');
  assert.equal(parseConfigText(text, 't.yaml', { STICKY: 'false' }).routes[0]!.sticky, false);
});

test('a substituted value that is not a number stays an error at its path', () => {
  const text = yaml('server:', '  port: "${PORT}"', MINIMAL);
  assert.throws(() => parseConfigText(text, 't.yaml', { PORT: 'eighty' }), /t\.yaml:2:9: server\.port: expected number/);
});

test("an error about a substituted value never shows the variable's value", () => {
  const text = yaml('backends:', '  qwen: { url: "${QWEN_URL}" }', 'routes:', '  - { name: d, backend: qwen }');
  assert.throws(
    () => parseConfigText(text, 't.yaml', { QWEN_URL: 'hunter2-not-a-url' }),
    (err: unknown) => err instanceof ConfigError && /backends\.qwen\.url/.test(err.message) && !err.message.includes('hunter2'),
  );
});

test('a malformed ${ reference is an error with a hint', () => {
  assert.throws(
    () => parseConfigText(withBackendLine('    headers: { x: "${1BAD}" }'), 't.yaml', {}),
    /backends\.qwen\.headers\.x: malformed "\$\{" reference/,
  );
});

test('defaults fill every key a minimal file leaves out', () => {
  const c = parseConfigText(MINIMAL, 't.yaml', {});
  assert.deepEqual(c.server, {
    host: '127.0.0.1',
    port: 8888,
    body_limit_mb: 64,
    body_discard_mb: 256,
    body_discard_s: 30,
    max_outputs_per_input: 1024,
    max_json_depth: 128,
    max_memory_key_repeats: 16,
    max_candidates_per_batch: 4096,
    max_answer_mb: 128,
    stream_answers_over_mb: 64,
    admission_timeout_s: 120,
    memory_shadow_share: 0.25,
    max_validation_errors: 100,
    headers_timeout_s: 60,
    body_timeout_s: 60,
    keep_alive_timeout_s: 72,
    max_connections: 1024,
    drain_timeout_s: 30,
    tls_handshake_timeout_s: 10,
  });
  assert.equal(c.agent.agent_id, 'magma-gateway');
  assert.equal(c.memory_key, '_gateway');
  assert.equal(c.request_timeout_s, 330);
  assert.equal(c.probe_interval_s, 5);
  assert.equal(c.shadow_max_in_flight, 16);
  assert.equal(c.state.redis, undefined);
  assert.equal(c.state.counters_ttl_s, 30 * 24 * 3600);
  assert.equal(c.state.index_max_entries, 200_000);
  assert.equal(c.admin.token, undefined);
  assert.equal(c.admin.recent_batches, 200);
  assert.deepEqual(c.experiments, {
    primary: 'tool_success',
    sequential: { planned_trajectories: 200, burn_in: 20 },
    max_strata: 20,
    max_keys: 10_000,
    max_trajectories: 50_000,
    index_ttl_s: 30 * 24 * 3600,
    outcomes_max: 10_000,
    outcomes_max_bytes: 4 * 1024 * 1024,
    earlier_max: 10,
    hash_candidates_max: 64,
    export_max_trajectories: 10_000,
    salt: 'magma-gateway',
    snapshot_interval_s: 60,
    snapshot_points: 1440,
  });
});

test('backend defaults apply and url becomes a one-element urls list', () => {
  const b = parseConfigText(MINIMAL, 't.yaml', {}).backends.qwen!;
  assert.deepEqual(b.urls, ['http://127.0.0.1:8001']);
  assert.equal(b.timeout_s, 300);
  assert.deepEqual(b.headers, {});
});

test('route defaults: sticky, no fallback, no shadow', () => {
  const r = parseConfigText(MINIMAL, 't.yaml', {}).routes[0]!;
  assert.equal(r.sticky, true);
  assert.deepEqual(r.fallback, []);
  assert.deepEqual(r.shadow, []);
  assert.equal(r.match, undefined);
});

test('the loaded config is frozen all the way down', () => {
  const c = parseConfigText(MINIMAL, 't.yaml', {});
  assert.ok(Object.isFrozen(c));
  assert.ok(Object.isFrozen(c.backends.qwen!.urls));
  assert.ok(Object.isFrozen(c.routes[0]!.fallback));
  assert.throws(() => {
    (c.routes as unknown[]).push({});
  }, TypeError);
  assert.throws(() => {
    (c.server as { port: number }).port = 1;
  }, TypeError);
});

test('deepFreeze freezes nested values and tolerates cycles', () => {
  const a: { self?: unknown; list: number[][] } = { list: [[1]] };
  a.self = a;
  assert.equal(deepFreeze(a), a);
  assert.ok(Object.isFrozen(a.list[0]));
});

test('config/gateway.yaml is valid and routes ensemble then an A/B catch-all', () => {
  const c = loadConfigFile(`${ROOT}config/gateway.yaml`, {});
  assert.deepEqual(Object.keys(c.backends), ['talker', 'actor']);
  assert.deepEqual(
    c.routes.map((r) => r.name),
    ['ensemble', 'ab'],
  );
  assert.equal(c.routes[0]!.sticky, false);
  assert.deepEqual(c.routes[1]!.split, { talker: 50, actor: 50 });
});

test('config/examples/full.yaml is valid when its variables are set', () => {
  const c = loadConfigFile(`${ROOT}config/examples/full.yaml`, { GATEWAY_ADMIN_TOKEN: 't', QWEN_TOKEN: 'q' });
  assert.equal(c.admin.token, 't');
  assert.equal(c.state.redis?.url, 'redis://127.0.0.1:6379');
  assert.equal(c.routes[c.routes.length - 1]!.match, undefined);
});
