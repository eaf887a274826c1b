import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { describeError } from '../src/commands/check-http.js';
import { codeForStatus, errorBody, GATEWAY_ERR, GATEWAY_ERROR_CODES, GatewayError, registeredBody, statusOf } from '../src/errors.js';

const GATEWAY_ERR_CODES = Object.keys(GATEWAY_ERR) as (keyof typeof GATEWAY_ERR)[]; // Object.keys types its result string[]

const page = readFileSync('docs/errors.md', 'utf8');

test('every gateway error code is documented in the error table of docs/errors.md', () => {
  for (const code of GATEWAY_ERROR_CODES) {
    assert.match(page, new RegExp(`^\\| \`${code}\` \\| .+ \\|$`, 'm'), `${code} missing from the table of docs/errors.md`);
  }
});

test('docs/errors.md documents no gateway error code that does not exist', () => {
  const documented = [...page.matchAll(/^\| `(gateway_[a-z_]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(documented)].sort(), [...GATEWAY_ERROR_CODES].sort());
});

test('HTTP statuses map to the documented codes', () => {
  assert.equal(codeForStatus(503), 'gateway_backend_not_ready');
  assert.equal(codeForStatus(500), 'gateway_backend_http_error');
  assert.equal(codeForStatus(502), 'gateway_backend_http_error');
  assert.equal(codeForStatus(422), 'gateway_backend_rejected');
  assert.equal(codeForStatus(429), 'gateway_backend_rejected');
});

test('every GATEWAY_ERR_* code is documented in the table of docs/errors.md with its status, and no other is', () => {
  for (const code of GATEWAY_ERR_CODES) {
    const status = String(statusOf(code) ?? '—');
    assert.match(page, new RegExp(`^\\| \`${code}\` \\| ${status} \\| .+ \\|$`, 'm'), `${code} missing from the table of docs/errors.md`);
  }
  const documented = [...page.matchAll(/^\| `(GATEWAY_ERR_[A-Z_]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(documented)].sort(), [...GATEWAY_ERR_CODES].sort());
  assert.equal(documented.length, GATEWAY_ERR_CODES.length, 'a code is documented twice');
});

test('a GatewayError carries its code and the status its code is answered with', () => {
  const err = new GatewayError('GATEWAY_ERR_BODY_TOO_LARGE', 'too big');
  assert.equal(err.code, 'GATEWAY_ERR_BODY_TOO_LARGE');
  assert.equal(err.statusCode, 413);
  assert.equal(new GatewayError('GATEWAY_ERR_CONFIG_INVALID', 'x').statusCode, undefined);
  assert.equal(new GatewayError('GATEWAY_ERR_COACHING_BACKEND', 'x', { statusCode: 409 }).statusCode, 409);
  assert.deepEqual(errorBody('GATEWAY_ERR_NOT_FOUND', 'gone'), { detail: 'gone', code: 'GATEWAY_ERR_NOT_FOUND' });
});

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (name.endsWith('.ts')) yield path;
  }
}

const srcFiles = [...sources('src')].map((path) => ({ path, text: readFileSync(path, 'utf8') }));

/** Classes in src that are GatewayError or extend one (transitively). */
function gatewayErrorClasses(): Set<string> {
  const parents = new Map<string, string>();
  for (const { text } of srcFiles) {
    for (const m of text.matchAll(/class (\w+) extends (\w+)/g)) parents.set(m[1]!, m[2]!);
  }
  const out = new Set(['GatewayError']);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [child, parent] of parents) {
      if (out.has(parent) && !out.has(child)) {
        out.add(child);
        grew = true;
      }
    }
  }
  return out;
}

test('every throw in src raises a GatewayError (so a registered code); a plain Error fails this test', () => {
  const ours = gatewayErrorClasses();
  for (const c of ['ConfigError', 'UsageError', 'RedisUnavailable', 'JsonSyntaxError', 'JsonDepthError', 'TransportError']) {
    assert.ok(ours.has(c), `${c} should extend GatewayError`);
  }
  // The JSON decoder's private control-flow token: caught inside json-decode-error.ts, never leaves it.
  const allowed = new Set(['Fail']);
  const bad: string[] = [];
  for (const { path, text } of srcFiles) {
    for (const m of text.matchAll(/throw new (\w+)\(/g)) {
      if (!ours.has(m[1]!) && !allowed.has(m[1]!)) bad.push(`${path}: throw new ${m[1]}(`);
    }
    for (const m of text.matchAll(/new GatewayError\('(\w+)'/g)) {
      if (!Object.hasOwn(GATEWAY_ERR, m[1]!)) bad.push(`${path}: unregistered code ${m[1]}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('every HTTP error body in src is built by errorBody (detail + code), but the FastAPI-shaped 422', () => {
  // The 422 for an invalid AgentRequest keeps FastAPI's exact `{"detail": [...]}` (docs/errors.md).
  const fastApi422 = new Set([join('src', 'routes', 'coaching.ts'), join('src', 'batch', 'read-batch.ts')]);
  const bad: string[] = [];
  for (const { path, text } of srcFiles) {
    if (path === join('src', 'errors.ts')) continue;
    for (const m of text.matchAll(/(send|stringify|stringifyExact)\(\{ (reloaded: false, )?detail\b/g)) {
      const is422 = fastApi422.has(path) && /^stringifyExact\(\{ detail \}\)|^stringifyExact\(\{ detail: (parsed\.detail|tooBig) \}\)/.test(text.slice(m.index));
      if (!is422) bad.push(`${path}: ${m[0]}`);
    }
    if (/const \w+ = \{ detail:/.test(text)) bad.push(`${path}: a { detail } body constant`);
  }
  assert.deepEqual(bad, []);
});

test("a GatewayError's code is not mistaken for a transport errno when the check command describes a failure", () => {
  assert.equal(describeError(new GatewayError('GATEWAY_ERR_USAGE', 'not a URL: "x"')), 'not a URL: "x"');
  const refused = Object.assign(new Error('connect failed'), { code: 'ECONNREFUSED' });
  assert.equal(describeError(new GatewayError('GATEWAY_ERR_CHECK_TRANSPORT', 'GET /health', { cause: refused })), 'ECONNREFUSED: GET /health');
});

test('each message template is an HTTP answer the README documents, and its text is written only in the registry', () => {
  const templated = GATEWAY_ERR_CODES.filter((code) => 'message' in GATEWAY_ERR[code]);
  assert.deepEqual(templated.sort(), ['GATEWAY_ERR_BODY_TOO_LARGE', 'GATEWAY_ERR_HEADERS_TOO_LARGE', 'GATEWAY_ERR_INTERNAL', 'GATEWAY_ERR_REQUEST_TIMEOUT']);
  const messages = [
    registeredBody('GATEWAY_ERR_BODY_TOO_LARGE', 'server.body_limit_mb', '2 MiB'),
    registeredBody('GATEWAY_ERR_BODY_TOO_LARGE', 'experiments.outcomes_max_bytes', '4096 bytes'),
    registeredBody('GATEWAY_ERR_HEADERS_TOO_LARGE'),
    registeredBody('GATEWAY_ERR_INTERNAL'),
    registeredBody('GATEWAY_ERR_REQUEST_TIMEOUT', 'headers', 5),
    registeredBody('GATEWAY_ERR_REQUEST_TIMEOUT', 'body', 7),
  ];
  assert.deepEqual(messages.map((m) => m.detail), [
    'request body exceeds server.body_limit_mb (2 MiB)',
    'request body exceeds experiments.outcomes_max_bytes (4096 bytes)',
    'request headers too large',
    'internal gateway error',
    'request headers not received within server.headers_timeout_s (5 s)',
    'request body not received within server.body_timeout_s (7 s)',
  ]);
  for (const { code, detail } of messages) {
    assert.notEqual(statusOf(code), undefined, `${code} is answered over HTTP`);
    assert.match(page, new RegExp(`^\\| \`${code}\` \\| ${statusOf(code)} \\| .+ \\|$`, 'm'), `${code} documented with its status`);
    // The fixed head of the message (before any value): written once, in the registry.
    const head = detail.split(/\(|\d/, 1)[0]!.trim(); // split always yields a first element
    const writers = srcFiles.filter((f) => f.text.includes(head)).map((f) => f.path);
    assert.deepEqual(writers.filter((p) => !p.endsWith('errors.ts')), [], `"${head}" is written outside src/errors.ts`);
  }
});
