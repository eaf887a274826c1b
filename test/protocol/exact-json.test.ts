import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  intKey,
  isNumberMark,
  isStrictInt,
  JsonSyntaxError,
  numberMarkText,
  parseExact,
  stringifyExact,
} from '../../src/protocol/exact-json.js';

function roundTrip(text: string): string {
  const p = parseExact(text);
  return stringifyExact(p.value, p.marked);
}

test('big integers in free-form objects round-trip digit for digit', () => {
  const text = '{"memory":{"n":12345678901234567890,"neg":-99999999999999999999999,"list":[1,18446744073709551617]}}';
  assert.equal(roundTrip(text), text);
});

test('non-canonical floats keep their text: 1.0, 1.50, 1e5, 1E-7, -0, 0.0000001', () => {
  const text = '{"a":1.0,"b":1.50,"c":1e5,"d":1E-7,"e":-0,"f":0.0000001,"g":-0.0,"h":2.5e+3}';
  assert.equal(roundTrip(text), text);
});

test('canonical numbers take the fast path and need no markers', () => {
  const p = parseExact('{"a":1,"b":0.25,"c":-3,"d":123456789012345,"e":[0.1,2]}');
  assert.equal(p.marked, false);
  assert.deepEqual(p.value, { a: 1, b: 0.25, c: -3, d: 123456789012345, e: [0.1, 2] });
});

test('number look-alikes inside strings are left alone', () => {
  const text = '{"s":"x:1.0, [007, -0 and 12345678901234567890","n":1.0,"t":"\\"quoted\\" 1e5"}';
  const p = parseExact(text);
  assert.equal((p.value as { s: string }).s, 'x:1.0, [007, -0 and 12345678901234567890');
  assert.equal(stringifyExact(p.value, p.marked), text);
});

test('strings ending in escaped backslashes before a quote are tracked correctly', () => {
  const text = '{"a":"back\\\\","b":1.0,"c":"q\\\\\\"x","d":[2.50]}';
  assert.equal(roundTrip(text), text);
});

test('a __proto__ key is ordinary data and round-trips without touching prototypes', () => {
  const text = '{"memory":{"__proto__":{"polluted":1.0},"x":1}}';
  const p = parseExact(text);
  const mem = (p.value as { memory: Record<string, unknown> }).memory;
  assert.equal(Object.getPrototypeOf(mem), Object.prototype);
  assert.ok(Object.prototype.hasOwnProperty.call(mem, '__proto__'));
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(stringifyExact(p.value, p.marked), text);
});

test('1e400 is flagged non-finite and kept as a marker', () => {
  const p = parseExact('{"x":1e400}');
  assert.equal(p.nonFinite, true);
  const x = (p.value as { x: unknown }).x;
  assert.ok(isNumberMark(x));
  assert.equal(numberMarkText(x as string), '1e400');
});

test('NaN, Infinity and truncated bodies are syntax errors', () => {
  for (const bad of ['{"x":NaN}', '{"x":Infinity}', '{"x":-Infinity}', '{"x":1', '{"x":"abc', '']) {
    assert.throws(() => parseExact(bad), JsonSyntaxError, bad);
  }
});

test('invalid number grammar is not rescued by the rewrite (01, 1., .5)', () => {
  for (const bad of ['{"x":01.0}', '{"x":1.}', '{"x":.5}', '{"x":1.0.0}']) {
    assert.throws(() => parseExact(bad), JsonSyntaxError, bad);
  }
});

test('strict integers accept integer literals of any size and reject 1.0, 1e0, true, "1"', () => {
  const p = parseExact('[7,-3,99999999999999999999,1.0,1e0,true,"1",1.5,1e+21]');
  const v = p.value as unknown[];
  assert.deepEqual(v.map(isStrictInt), [true, true, true, false, false, false, false, false, false]);
});

test('intKey normalizes -0 and big integers', () => {
  const v = parseExact('[-0,0,99999999999999999999]').value as unknown[];
  assert.equal(intKey(v[0]), '0');
  assert.equal(intKey(v[1]), '0');
  assert.equal(intKey(v[2]), '99999999999999999999');
});

test('markers never leak into output even when mixed with new values', () => {
  const p = parseExact('{"m":{"big":123456789012345678901234}}');
  const out = stringifyExact({ wrapped: [p.value, { extra: 'x' }] }, true);
  assert.equal(out, '{"wrapped":[{"m":{"big":123456789012345678901234}},{"extra":"x"}]}');
  assert.ok(!out.includes('\uE000'));
});

test('a random corpus of numbers round-trips exactly', () => {
  const toks: string[] = [];
  let seed = 42;
  const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let i = 0; i < 2000; i++) {
    const kind = Math.floor(rnd() * 5);
    const digits = String(Math.floor(rnd() * 1e9)) + String(Math.floor(rnd() * 1e9));
    if (kind === 0) toks.push(digits.slice(0, 1 + Math.floor(rnd() * 18)).replace(/^0+(?=\d)/, ''));
    else if (kind === 1) toks.push(`${digits.slice(0, 3).replace(/^0+(?=\d)/, '')}.${digits.slice(3, 5 + Math.floor(rnd() * 12))}`);
    else if (kind === 2) toks.push(`${digits[0] === '0' ? '1' : digits[0]}.${digits.slice(1, 4)}e${rnd() < 0.5 ? '-' : '+'}${Math.floor(rnd() * 300)}`);
    else if (kind === 3) toks.push(`-${digits.slice(0, 1 + Math.floor(rnd() * 17)).replace(/^0+(?=\d)/, '')}`);
    else toks.push(String(rnd() * 1000));
  }
  const text = `{"xs":[${toks.join(',')}]}`;
  assert.equal(roundTrip(text), text);
});
