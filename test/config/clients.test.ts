/**
 * `clients:` in the config (docs/operations.md#client-keys and docs/configuration.md): keys from the environment, one schema for
 * names, keys and limits with documented defaults, clear errors naming the location that never quote a key,
 * and warnings for weak or awkward keys.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { formatSummary } from '../../src/config/summary.js';
import { configWarnings } from '../../src/config/warnings.js';

const KEY_A = 'ka-0123456789abcdef0123';
const KEY_B = 'kb-0123456789abcdef0123';

function withClients(...lines: string[]): string {
  return ['backends:', '  qwen: { url: http://127.0.0.1:8001 }', 'routes:', '  - { name: d, backend: qwen }', 'clients:', ...lines, ''].join('\n');
}

function problems(text: string, env: Record<string, string> = {}): string {
  try {
    parseConfigText(text, 'c.yaml', env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail('the config was accepted');
}

test('keys come from the environment, limits are optional and max_wait_s defaults to 30', () => {
  const c = parseConfigText(
    withClients('  team-a:', '    key: ${TEAM_A_KEY}', '    max_batches_in_flight: 4', '    max_candidates_per_minute: 20000', '  team-b: { key: "${TEAM_B_KEY}" }'),
    'c.yaml',
    { TEAM_A_KEY: KEY_A, TEAM_B_KEY: KEY_B },
  );
  assert.deepEqual(c.clients, {
    'team-a': { key: KEY_A, max_batches_in_flight: 4, max_candidates_per_minute: 20000, max_wait_s: 30 },
    'team-b': { key: KEY_B, max_wait_s: 30 },
  });
  assert.ok(Object.isFrozen(c.clients));
});

test('without clients: the config has none (every agent endpoint open)', () => {
  const c = parseConfigText(withClients().replace('clients:\n', ''), 'c.yaml', {});
  assert.equal(c.clients, undefined);
});

test('a key whose variable is unset names the variable, not a value', () => {
  const msg = problems(withClients('  team-a: { key: "${TEAM_A_KEY}" }'));
  assert.match(msg, /c\.yaml:6:\d+: clients\.team-a\.key: environment variable TEAM_A_KEY is not set/);
});

test('an empty key (its variable set but empty) is refused at its location', () => {
  const msg = problems(withClients('  team-a: { key: "${TEAM_A_KEY}" }'), { TEAM_A_KEY: '' });
  assert.match(msg, /c\.yaml:6:\d+: clients\.team-a\.key: must not be empty/);
});

test('a key with a space or a control character is refused without being quoted', () => {
  for (const key of ['has space-0123456789', 'tab\tkey-0123456789', 'é-key-0123456789012']) {
    const msg = problems(withClients('  team-a: { key: "${K}" }'), { K: key });
    assert.match(msg, /clients\.team-a\.key: use visible ASCII characters without spaces/);
    assert.ok(!msg.includes(key), msg);
  }
});

test('two clients with the same key are refused at the second, naming the first and never the key', () => {
  const msg = problems(withClients('  team-a: { key: "${A}" }', '  team-b: { key: "${B}" }'), { A: KEY_A, B: KEY_A });
  assert.match(msg, /c\.yaml:7:\d+: clients\.team-b\.key: the same key as clients\.team-a: every client needs its own key/);
  assert.ok(!msg.includes(KEY_A), msg);
});

test('client names follow the name rule, and anonymous and unauthorized are reserved for the metrics label', () => {
  assert.match(problems(withClients(`  "team a": { key: ${KEY_A} }`)), /clients\["team a"\]: use letters, digits/);
  assert.match(problems(withClients(`  "123": { key: ${KEY_A} }`)), /a name needs at least one non-digit character/);
  for (const name of ['anonymous', 'unauthorized']) {
    assert.match(problems(withClients(`  ${name}: { key: ${KEY_A} }`)), new RegExp(`clients\\.${name}: "${name}" is reserved`));
  }
});

test('an empty clients map is refused: it would refuse every request', () => {
  assert.match(problems(withClients('  {}').replace('clients:\n  {}', 'clients: {}')), /clients: at least one client/);
});

test('limits must be positive integers and max_wait_s at least 0; an unknown key suggests the known one', () => {
  const msg = problems(
    withClients(`  a: { key: ${KEY_A}, max_batches_in_flight: 0, max_candidates_per_minute: 1.5, max_wait: 3 }`, `  b: { key: ${KEY_B}, max_wait_s: -1 }`),
  );
  assert.match(msg, /clients\.a\.max_batches_in_flight: /);
  assert.match(msg, /clients\.a\.max_candidates_per_minute: /);
  assert.match(msg, /clients\.a\.max_wait: unknown key "max_wait" \(did you mean "max_wait_s"\?\)/);
  assert.match(msg, /clients\.b\.max_wait_s: must be 0 \(no waiting\) or more/);
  assert.ok(!msg.includes(KEY_A) && !msg.includes(KEY_B), msg);
});

test('limits given through the environment are read as numbers', () => {
  const c = parseConfigText(withClients(`  a: { key: ${KEY_A}, max_batches_in_flight: "\${N}", max_wait_s: "\${W}" }`), 'c.yaml', { N: '3', W: '0' });
  assert.equal(c.clients?.a?.max_batches_in_flight, 3);
  assert.equal(c.clients?.a?.max_wait_s, 0);
});

test('a short key and a key an address must percent-encode are warnings naming the client, never the key', () => {
  const c = parseConfigText(withClients('  short: { key: "abc123" }', '  slashy: { key: "${S}" }', `  fine: { key: ${KEY_A} }`), 'c.yaml', {
    S: 'ab/cd+ef=0123456789?x',
  });
  const warnings = configWarnings(c);
  assert.deepEqual(warnings.map((w) => w.path), ['clients.short.key', 'clients.slashy.key']);
  assert.match(warnings[0]!.message, /shorter than 16 characters/);
  assert.match(warnings[1]!.message, /percent-encoded in an address/);
  for (const w of warnings) assert.ok(!w.message.includes('abc123') && !w.message.includes('ab/cd'), w.message);
});

test('validate lists the clients with their limits and without their keys', () => {
  const c = parseConfigText(withClients(`  team-a: { key: ${KEY_A}, max_batches_in_flight: 4 }`, `  team-b: { key: ${KEY_B} }`), 'c.yaml', {});
  const text = formatSummary(c);
  assert.match(text, /clients {2}2 \(a key on every agent endpoint\)/);
  assert.match(text, /team-a \(max 4 batches in flight, waits up to 30 s\)/);
  assert.match(text, /team-b \(no limits\)/);
  assert.ok(!text.includes(KEY_A) && !text.includes(KEY_B));
});
