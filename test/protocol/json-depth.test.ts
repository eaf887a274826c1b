/**
 * The nesting scan (protocol/json/json-depth.ts) runs before JSON.parse on every client and backend text: it must
 * count only brackets outside strings, and refuse deep text before anything recursive sees it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JsonDepthError, JsonSyntaxError, parseExact, stringifyExact } from '../../src/protocol/json/exact-json.js';
import { exceedsDepth, MAX_JSON_DEPTH_CEILING } from '../../src/protocol/json/json-depth.js';
import { parseAgentRequest } from '../../src/protocol/request.js';

test('depth counts [ and { outside strings; the first bracket past the limit is reported', () => {
  assert.equal(exceedsDepth('[[1],{"a":[2]}]', 3), -1);
  assert.equal(exceedsDepth('[[1],{"a":[2]}]', 2), 10);
  assert.equal(exceedsDepth('{"a":"[[[[[{{{{{"}', 1), -1, 'brackets inside strings do not count');
  assert.equal(exceedsDepth('{"a\\"[[[":"\\\\"}', 1), -1, 'escaped quotes do not end a string, escaped backslashes do not escape');
  assert.equal(exceedsDepth('{"a":"\\\\\\"[[["}', 1), -1);
  assert.equal(exceedsDepth('[' + '"x",'.repeat(1000) + '[[]]]', 2), 4002);
  assert.equal(exceedsDepth('"unterminated [[[[', 1), -1, 'left for JSON.parse to report');
  assert.equal(exceedsDepth('[]'.repeat(10_000), 1), -1, 'siblings are not nesting');
});

test('parseExact refuses deep text with JsonDepthError (a JsonSyntaxError) naming the key', () => {
  const deep = '['.repeat(200) + ']'.repeat(200);
  assert.throws(
    () => parseExact(deep, { maxDepth: 100 }),
    (err: unknown) => err instanceof JsonDepthError && err instanceof JsonSyntaxError && /deeper than 100 levels \(server\.max_json_depth\)/.test(err.message),
  );
  assert.deepEqual(parseExact('['.repeat(100) + ']'.repeat(100), { maxDepth: 100 }).value !== undefined, true);
});

test('without a limit given, parseExact still applies the ceiling, so stringify never overflows', () => {
  const over = '['.repeat(MAX_JSON_DEPTH_CEILING + 1) + ']'.repeat(MAX_JSON_DEPTH_CEILING + 1);
  assert.throws(() => parseExact(over), JsonDepthError);
  const at = '['.repeat(MAX_JSON_DEPTH_CEILING) + ']'.repeat(MAX_JSON_DEPTH_CEILING);
  const p = parseExact(at);
  assert.equal(stringifyExact(p.value), at);
  // A caller asking for more than the ceiling gets the ceiling.
  assert.throws(() => parseExact(over, { maxDepth: 100_000 }), JsonDepthError);
});

test('a request with memory nested 10,000 levels is one 422 at ["body"] naming server.max_json_depth', () => {
  const memory = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
  const text = `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":${memory}}]}`;
  const r = parseAgentRequest(text, { maxOutputsPerInput: 8, maxJsonDepth: 128 });
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.deepEqual(r.detail.map((d) => [d.type, d.loc]), [['json_invalid', ['body']]]);
  assert.match(r.detail[0]!.msg, /deeper than 128 levels \(server\.max_json_depth\)/);
  // Deep non-finite numbers would have been walked by findNonFinite: refused first as well.
  const nonFinite = text.replace('1}', '1e400}');
  assert.equal(parseAgentRequest(nonFinite, { maxOutputsPerInput: 8, maxJsonDepth: 128 }).ok, false);
});

test('a request just inside the limit is accepted, memory intact', () => {
  // request object, inputs list, input object, memory object: memory content starts at depth 5.
  const inner = '{"a":'.repeat(20) + '1.0' + '}'.repeat(20);
  const text = `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"x"},"memory":{"m":${inner}}}]}`;
  const r = parseAgentRequest(text, { maxOutputsPerInput: 8, maxJsonDepth: 24 });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(parseAgentRequest(text, { maxOutputsPerInput: 8, maxJsonDepth: 23 }).ok, false);
  if (r.ok) assert.equal(stringifyExact(r.request.inputs[0]!.memory), `{"m":${inner}}`);
});

test('brackets and backslashes inside many strings never count', () => {
  const text = '[' + Array.from({ length: 2000 }, () => JSON.stringify('[{\\"'.repeat(500))).join(',') + ']';
  assert.equal(exceedsDepth(text, 1), -1);
  assert.equal(exceedsDepth(text.slice(0, -1) + ',[]]', 1), text.length);
});
