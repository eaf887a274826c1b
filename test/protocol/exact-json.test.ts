import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  intKey,
  isNumberMark,
  isStrictInt,
  JsonSyntaxError,
  numberMark,
  numberMarkText,
  parseExact,
  stringifyExact,
} from '../../src/protocol/json/exact-json.js';
import { describeValue, safeReason } from '../../src/protocol/describe.js';

function roundTrip(text: string): string {
  const p = parseExact(text);
  return stringifyExact(p.value);
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
  assert.equal(stringifyExact(p.value), text);
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
  assert.equal(stringifyExact(p.value), text);
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
  const out = stringifyExact({ wrapped: [p.value, { extra: 'x' }] });
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

test('stringifyExact: a marker embedded inside another string stays text, without its secret prefix', () => {
  const m = numberMark('1.0');
  const value = {
    message: `candidate answers request_id "${m}", not "r1"`,
    quoted: `"${m}"`,
    list: [`${m}`, `x${m}`, `${m}x`, `${m}"`],
    n: m,
  };
  const out = stringifyExact(value);
  assert.ok(!out.includes('\uE000'), out);
  assert.deepEqual(JSON.parse(out), {
    message: 'candidate answers request_id "1.0", not "r1"',
    quoted: '"1.0"',
    list: [1, 'x1.0', '1.0x', '1.0"'],
    n: 1,
  });
  // Only the whole values became numbers, written as they were.
  assert.ok(out.includes('"list":[1.0,"x1.0"') && out.endsWith('"n":1.0}'), out);
});

test('stringifyExact: a marker used as an object key is text, never a bare number', () => {
  const m = numberMark('12345678901234567890');
  const out = stringifyExact({ [m]: m, a: [m, { [m]: 1 }] });
  assert.ok(!out.includes('\uE000'), out);
  assert.equal(out, '{"12345678901234567890":12345678901234567890,"a":[12345678901234567890,{"12345678901234567890":1}]}');
  assert.doesNotThrow(() => JSON.parse(out));
});

test('stringifyExact: a whole string that only starts like a marker (not a number after it) stays a string', () => {
  const out = stringifyExact([numberMark('1.0 and more'), numberMark(''), numberMark('1.0.0')]);
  assert.deepEqual(JSON.parse(out), ['1.0 and more', '', '1.0.0']);
});

test('a top-level marker and markers at every structural position come back as numbers', () => {
  assert.equal(stringifyExact(numberMark('-0')), '-0');
  assert.equal(roundTrip('[1.0,[2.50],{"a":1e5,"b":[-0]}]'), '[1.0,[2.50],{"a":1e5,"b":[-0]}]');
});

test('syntax errors never quote a marker, even cut in the middle', () => {
  for (const text of ['{"a":1.0,"b":}', '[1.0 2]', '{"a":[12345678901234567890 x]}']) {
    assert.throws(() => parseExact(text), (err: unknown) => err instanceof JsonSyntaxError && !err.message.includes('\uE000'));
  }
});

test('describeValue: markers as their number text, strings cut and JSON-escaped, containers named', () => {
  assert.equal(describeValue(numberMark('1.0')), '1.0');
  assert.equal(describeValue('a "b"\n'), '"a \\"b\\"\\n"');
  assert.equal(describeValue('x'.repeat(1000)), JSON.stringify('x'.repeat(80) + '…'));
  assert.equal(describeValue({ a: 1 }), 'an object');
  assert.equal(describeValue([1]), 'a list');
  assert.equal(describeValue(undefined), 'nothing');
  assert.equal(safeReason(`bad ${numberMark('7.0')}`), 'bad 7.0');
});

test('intKey of a million-digit integer is its text (no BigInt round trip)', () => {
  const digits = '9'.repeat(1_000_000);
  assert.equal(intKey(numberMark(digits)), digits);
  assert.equal(intKey(numberMark('-0')), '0');
});
