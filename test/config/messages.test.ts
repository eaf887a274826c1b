/**
 * Config messages an operator acts on without reading the schema: "did you mean" for a misspelt key at any
 * level, URLs that are not http(s), and warnings for a fallback or shadow that is the route's only backend.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, knownKeysAt, parseConfigText } from '../../src/config/load.js';
import { closest, editDistance } from '../../src/config/nearest-name.js';
import { configWarnings } from '../../src/config/warnings.js';

const SRC = 'm.yaml';
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

test('a misspelt key gets the nearest known key of its own level', () => {
  const got = problems(
    yaml(
      'server: { prot: 1 }',
      'request_timeout: 5',
      'backends:',
      '  qwen: { url: http://127.0.0.1:8001, timeout: 3 }',
      'routes:',
      '  - name: d',
      '    backend: qwen',
      '    fallbak: []',
      '    match: { instruction_type: { glb: "x" } }',
      '  - { name: z, backend: qwen }',
      'state: { redis: { url: "redis://x", key_prefx: "a" } }',
    ),
  );
  assert.deepEqual(got, [
    '1:11 server.prot: unknown key "prot" (did you mean "port"?)',
    '2:1 request_timeout: unknown key "request_timeout" (did you mean "request_timeout_s"?)',
    '4:39 backends.qwen.timeout: unknown key "timeout" (did you mean "timeout_s"?)',
    '8:5 routes[0].fallbak: unknown key "fallbak" (did you mean "fallback"?)',
    '9:34 routes[0].match.instruction_type.glb: unknown key "glb" (did you mean "glob"?)',
    '11:37 state.redis.key_prefx: unknown key "key_prefx" (did you mean "key_prefix"?)',
  ]);
});

test('a key far from every known key gets no suggestion', () => {
  assert.deepEqual(problems(yaml('colour: blue', ...BACKENDS, ...ROUTES)), ['1:1 colour: unknown key "colour"']);
});

test('the known keys are read from the schema at each level', () => {
  assert.ok(knownKeysAt([]).includes('request_timeout_s'));
  assert.ok(knownKeysAt(['backends', 'any-name']).includes('eject_after_failures'));
  assert.ok(knownKeysAt(['routes', 3]).includes('shadow'));
  assert.ok(knownKeysAt(['routes', 0, 'match', 'tools']).includes('contains'));
  assert.deepEqual(knownKeysAt(['nowhere', 'deep']), []);
});

test('edit distance counts a transposition as one edit and stops past its bound', () => {
  assert.equal(editDistance('prot', 'port', 2), 1);
  assert.equal(editDistance('timeout', 'timeout_s', 2), 2);
  assert.equal(editDistance('a'.repeat(50), 'b', 3), 4);
  assert.equal(closest('fallbacks', ['fallback', 'shadow']), 'fallback');
  assert.equal(closest('xyz', ['fallback', 'shadow']), undefined);
});

test('a backend URL that is not http(s) says so, for ftp://, a bare word and a number', () => {
  const got = problems(
    yaml('backends:', '  a: { url: "ftp://h/x" }', '  b: { urls: ["http://ok:1", "localhost"] }', '  c: { url: 5 }', ...ROUTES.slice(0, 1), '  - { name: d, backend: a }'),
  );
  assert.deepEqual(got, [
    '2:13 backends.a.url: must be an http:// or https:// URL, e.g. http://127.0.0.1:8001',
    '3:30 backends.b.urls[1]: must be an http:// or https:// URL, e.g. http://127.0.0.1:8001',
    '4:13 backends.c.url: expected a URL string',
  ]);
});

test("a fallback or shadow that is a route's only backend is a warning, not an error", () => {
  const config = parseConfigText(
    yaml(
      ...BACKENDS,
      'routes:',
      '  - { name: ab, match: { extra_keys.ab: true }, split: { qwen: 1, gpt: 1 }, fallback: [qwen, gpt], shadow: [gpt] }',
      '  - { name: one, match: { extra_keys.one: true }, split: { gpt: 1 }, fallback: [gpt] }',
      '  - { name: d, backend: qwen, fallback: [gpt, qwen], shadow: [qwen] }',
    ),
    SRC,
    {},
  );
  // A split falling back onto its own arms is a warning too: a crossover that dilutes the experiment.
  assert.deepEqual(
    configWarnings(config).map((w) => w.path),
    ['routes[0].fallback[0]', 'routes[0].fallback[1]', 'routes[1].fallback[0]', 'routes[2].fallback[1]', 'routes[2].shadow[0]'],
  );
  const [w0, , w] = configWarnings(config);
  assert.match(w0!.message, /^split "ab" falls back to "qwen", another of its own arms: .*crossover/);
  assert.match(w!.message, /route "one" falls back to "gpt", its only backend/);
});

test('an ensemble falling back onto its members is no warning (a member\'s candidates go to another)', () => {
  const config = parseConfigText(
    yaml(...BACKENDS, 'routes:', '  - { name: gen, ensemble: { qwen: 1, gpt: 1 }, fallback: [qwen, gpt] }'),
    SRC,
    {},
  );
  assert.deepEqual(configWarnings(config), []);
});
