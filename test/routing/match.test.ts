/**
 * Match keys and operators (docs/routing.md#routes), one behaviour per test, on plain inputs without HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Condition } from '../../src/config/schema.js';
import type { AgentInput } from '../../src/protocol/types.js';
import { numberMark } from '../../src/protocol/json/exact-json.js';
import { compileKey, compileMatch, type Headers } from '../../src/routing/match.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import { globToRegExp } from '../../src/patterns/glob.js';
import { agentInput } from '../helpers/inputs.js';
import { decodedInput, type RoutingInput } from '../../src/routing/routing-input.js';

const input = agentInput;

/** A plain decoded input is matched through decodedInput; one read by the indexer as it is. */
function m(match: Record<string, Condition>, inp: AgentInput | RoutingInput, headers: Headers = {}): boolean {
  return compileMatch(match)('member' in inp ? inp : decodedInput(inp), headers);
}

test('instruction_type compares the instruction type', () => {
  const env = input({ instruction: { type: 'env', content: '{}' } });
  assert.equal(m({ instruction_type: 'env' }, env), true);
  assert.equal(m({ instruction_type: 'user' }, env), false);
});

test('attributes.<path> reads nested objects', () => {
  const inp = input({ attributes: { scene: { kitchen: { level: 'hard' } } } });
  assert.equal(m({ 'attributes.scene.kitchen.level': 'hard' }, inp), true);
  assert.equal(m({ 'attributes.scene.kitchen.level': 'easy' }, inp), false);
});

test('a digit segment indexes a list', () => {
  assert.equal(m({ 'attributes.known_robots.1': 'ur5' }, input({ attributes: { known_robots: ['panda', 'ur5'] } })), true);
});

test('a path never resolves to prototype members', () => {
  assert.equal(m({ 'attributes.constructor': { exists: true } }, input()), false);
});

test('extra_keys.<path> compares with its JSON type: true is not "true"', () => {
  assert.equal(m({ 'extra_keys.ensemble': true }, input({ extra_keys: { ensemble: true } })), true);
  assert.equal(m({ 'extra_keys.ensemble': true }, input({ extra_keys: { ensemble: 'true' } })), false);
});

test('memory.<path> reads the memory the client sent', () => {
  assert.equal(m({ 'memory.phase': 'plan' }, input({ memory: { phase: 'plan' } })), true);
});

test("memory.<path> refuses the gateway's own memory key", () => {
  assert.throws(() => compileKey('memory._gateway.backend', '_gateway'), /own memory key/);
  assert.throws(() => compileMatch({ 'memory.gw': { exists: true } }, 'gw'), /own memory key/);
});

test('tools: a plain value is membership in the tool names', () => {
  const inp = input({ tools: [{ name: 'press_button' }, { name: 'open_door' }] });
  assert.equal(m({ tools: 'open_door' }, inp), true);
  assert.equal(m({ tools: 'fly' }, inp), false);
});

test('tools is absent when the input has no tools', () => {
  assert.equal(m({ tools: { exists: false } }, input()), true);
  assert.equal(m({ tools: { exists: true } }, input({ tools: [{ name: 'a' }] })), true);
});

test('robots: a plain value is membership in attributes.known_robots', () => {
  const inp = input({ attributes: { known_robots: ['panda', 'ur5'] } });
  assert.equal(m({ robots: 'ur5' }, inp), true);
  assert.equal(m({ robots: 'spot' }, inp), false);
});

test('header.<name> ignores the case of the header name', () => {
  assert.equal(m({ 'header.X-Tier': 'gold' }, input(), { 'x-tier': 'gold' }), true);
  assert.equal(m({ 'header.x-tier': 'gold' }, input(), { 'X-Tier': 'gold' }), true);
});

test('header.<name> compares a config number to the header text', () => {
  assert.equal(m({ 'header.x-version': 2 }, input(), { 'x-version': '2' }), true);
});

test('a repeated header is a list: a plain value is membership', () => {
  assert.equal(m({ 'header.x-flag': 'b' }, input(), { 'x-flag': ['a', 'b'] }), true);
});

test('a plain value never matches an absent key', () => {
  assert.equal(m({ 'extra_keys.experiment': 'ab' }, input()), false);
});

test('in: the value is one of the list', () => {
  assert.equal(m({ 'attributes.scenario': { in: ['a', 'b'] } }, input({ attributes: { scenario: 'b' } })), true);
  assert.equal(m({ 'attributes.scenario': { in: ['a', 'b'] } }, input({ attributes: { scenario: 'c' } })), false);
  assert.equal(m({ 'attributes.scenario': { in: ['a'] } }, input()), false);
});

test('in on a list key: some element is one of the list', () => {
  const inp = input({ attributes: { known_robots: ['panda', 'ur5'] } });
  assert.equal(m({ robots: { in: ['spot', 'ur5'] } }, inp), true);
});

test('glob: * matches any run, anchored at both ends', () => {
  const inp = input({ attributes: { scenario: 'kitchen-easy' } });
  assert.equal(m({ 'attributes.scenario': { glob: 'kitchen-*' } }, inp), true);
  assert.equal(m({ 'attributes.scenario': { glob: 'kitchen' } }, inp), false);
  assert.equal(m({ 'attributes.scenario': { glob: '*easy*' } }, inp), true);
});

test('glob: ? is exactly one character', () => {
  assert.equal(globToRegExp('v?').test('v1'), true);
  assert.equal(globToRegExp('v?').test('v12'), false);
  assert.equal(globToRegExp('?').test('🤖'), true);
});

test('glob: character classes, ranges and negation', () => {
  assert.equal(globToRegExp('v[0-9]').test('v7'), true);
  assert.equal(globToRegExp('v[0-9]').test('vx'), false);
  assert.equal(globToRegExp('v[!0-9]').test('vx'), true);
  assert.equal(globToRegExp('[]a]').test(']'), true);
});

test('glob: regex characters and escaped wildcards are literal', () => {
  assert.equal(globToRegExp('a.b(c)').test('a.b(c)'), true);
  assert.equal(globToRegExp('a.b').test('axb'), false);
  assert.equal(globToRegExp('a\\*').test('a*'), true);
  assert.equal(globToRegExp('a\\*').test('ab'), false);
});

test('glob on a list key: some element matches', () => {
  assert.equal(m({ tools: { glob: 'press_*' } }, input({ tools: [{ name: 'open' }, { name: 'press_button' }] })), true);
});

test('exists: true when present, including null; false when absent', () => {
  const inp = input({ extra_keys: { a: null } });
  assert.equal(m({ 'extra_keys.a': { exists: true } }, inp), true);
  assert.equal(m({ 'extra_keys.b': { exists: true } }, inp), false);
  assert.equal(m({ 'extra_keys.b': { exists: false } }, inp), true);
});

test('contains: a substring of a string', () => {
  assert.equal(m({ 'attributes.task': { contains: 'door' } }, input({ attributes: { task: 'open the door' } })), true);
  assert.equal(m({ 'attributes.task': { contains: 'window' } }, input({ attributes: { task: 'open the door' } })), false);
});

test('contains: membership in a list', () => {
  assert.equal(m({ 'attributes.tags': { contains: 3 } }, input({ attributes: { tags: [1, 3] } })), true);
  assert.equal(m({ robots: { contains: 'panda' } }, input({ attributes: { known_robots: ['panda'] } })), true);
});

test('not: holds when the value differs or is absent', () => {
  assert.equal(m({ 'extra_keys.mode': { not: 'eval' } }, input({ extra_keys: { mode: 'train' } })), true);
  assert.equal(m({ 'extra_keys.mode': { not: 'eval' } }, input({ extra_keys: { mode: 'eval' } })), false);
  assert.equal(m({ 'extra_keys.mode': { not: 'eval' } }, input()), true);
});

test('regex: unanchored unless the pattern anchors', () => {
  const inp = input({ attributes: { scenario: 'lab-v12-x' } });
  assert.equal(m({ 'attributes.scenario': { regex: 'v\\d+' } }, inp), true);
  assert.equal(m({ 'attributes.scenario': { regex: '^v\\d+$' } }, inp), false);
});

test('numbers compare by value, number markers included', () => {
  assert.equal(m({ 'attributes.level': 7 }, input({ attributes: { level: 7 } })), true);
  assert.equal(m({ 'attributes.level': 7 }, input({ attributes: { level: numberMark('7.0') } })), true);
  assert.equal(m({ 'attributes.level': 7 }, input({ attributes: { level: '7' } })), false);
  assert.equal(m({ 'attributes.level': { in: [1, 7] } }, input({ attributes: { level: numberMark('7e0') } })), true);
});

test('text operators never match numbers or number markers', () => {
  assert.equal(m({ 'attributes.level': { glob: '*' } }, input({ attributes: { level: numberMark('1.0') } })), false);
  assert.equal(m({ 'attributes.level': { regex: '.' } }, input({ attributes: { level: 10 } })), false);
});

test('several operators in one condition must all hold', () => {
  const cond: Condition = { glob: 'kitchen-*', not: 'kitchen-test' };
  assert.equal(m({ 'attributes.s': cond }, input({ attributes: { s: 'kitchen-easy' } })), true);
  assert.equal(m({ 'attributes.s': cond }, input({ attributes: { s: 'kitchen-test' } })), false);
});

test('all conditions of a match must hold', () => {
  const match = { instruction_type: 'env', 'extra_keys.ab': true };
  assert.equal(m(match, input({ instruction: { type: 'env', content: '' }, extra_keys: { ab: true } })), true);
  assert.equal(m(match, input({ instruction: { type: 'user', content: '' }, extra_keys: { ab: true } })), false);
});

test('no match, or an empty one, selects every input', () => {
  assert.equal(compileMatch(undefined)(decodedInput(input()), {}), true);
  assert.equal(m({}, input()), true);
});

test('a bad glob fails when the match is compiled, not per input', () => {
  assert.throws(() => compileMatch({ 'attributes.s': { glob: 'a[b' } }), /invalid glob/);
});

test('memory.<path> on an input read by the indexer decodes only the member it names, the last one if repeated', () => {
  const text =
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},' +
    '"memory":{"phase":"act","history":[{"big":"' + 'x'.repeat(5000) + '"}],"ph\\u0061se":{"step":"plan"}}}]}';
  const r = readAgentRequest(Buffer.from(text), { maxOutputsPerInput: 4, maxJsonDepth: 32, memoryKey: '_gateway' });
  assert.ok(r.ok);
  const inp = r.request.inputs[0]!;
  assert.equal(m({ 'memory.phase.step': 'plan' }, inp), true);
  assert.equal(m({ 'memory.phase': 'act' }, inp), false);
  assert.equal(m({ 'memory.missing': { exists: false } }, inp), true);
  assert.equal(inp.raw.memory.decoded, false, 'the whole memory was never decoded');
});

test('attributes.<path>, extra_keys.<path> and robots on an input read by the indexer decode only the member named', () => {
  const big = '"' + 'x'.repeat(5000) + '"';
  const text =
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},' +
    `"attributes":{"blob":${big},"to":"a","known_robots":["r1"],"t\\u006f":"b"},` +
    `"extra_keys":{"blob":${big},"inference_mode":true}}]}`;
  const r = readAgentRequest(Buffer.from(text), { maxOutputsPerInput: 4, maxJsonDepth: 32, memoryKey: '_gateway' });
  assert.ok(r.ok);
  const inp = r.request.inputs[0]!;
  assert.equal(m({ 'attributes.to': 'b' }, inp), true, 'the last copy, as json.loads keeps');
  assert.equal(m({ robots: 'r1' }, inp), true);
  assert.equal(m({ robots: 'r2' }, inp), false);
  assert.equal(m({ 'extra_keys.inference_mode': true }, inp), true);
  assert.equal(m({ 'extra_keys.missing': { exists: false } }, inp), true);
  assert.equal(inp.raw.attributes.decoded, false, 'the whole attributes were never decoded');
  assert.equal(inp.raw.extraKeys.decoded, false, 'the whole extra_keys were never decoded');
});
