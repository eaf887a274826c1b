/**
 * The answer splitter (protocol/answer/answer-split.ts): wherever the bytes are cut into chunks, it finds the same
 * elements, each exactly the bytes between the array's separators, and refuses what is not an array.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ElementSplitter } from '../../src/protocol/answer/answer-split.js';

function split(text: string | Buffer, cut: number): { elements: string[]; ok: boolean; closed: boolean; problem?: string } {
  const elements: string[] = [];
  const s = new ElementSplitter((wrapped) => elements.push(wrapped.toString('utf8')));
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  let ok = true;
  for (let at = 0; at < bytes.length && ok; at += cut) ok = s.write(bytes.subarray(at, Math.min(bytes.length, at + cut)));
  return { elements, ok, closed: s.closed, problem: s.problem };
}

const TRICKY = ' [ {"a":"x,]}\\"\\\\","b":[1,{"c":"]"}]} ,\n"s\\u005d,",  12.5e3 ,[[],{}],{"k":{"\\"":"é🙂"}} ] \n';

test('every chunking of an answer gives the same elements, each `[` + its bytes + `]`', () => {
  const whole = split(TRICKY, TRICKY.length);
  assert.equal(whole.ok, true);
  assert.equal(whole.closed, true);
  const parsed = JSON.parse(TRICKY) as unknown[];
  assert.deepEqual(whole.elements.map((e) => (JSON.parse(e) as unknown[])[0]), parsed);
  for (let cut = 1; cut <= 9; cut++) assert.deepEqual(split(TRICKY, cut).elements, whole.elements, `chunks of ${cut} bytes`);
});

test('long strings with escapes at every offset are crossed whole, however the chunks fall', () => {
  const strings = Array.from({ length: 40 }, (_, k) => `${'a'.repeat(k)}"\\${'é'.repeat(k % 5)}\\"${'b'.repeat(40 - k)}],{`);
  const text = JSON.stringify(strings.map((s, k) => ({ s, k })));
  const expected = (JSON.parse(text) as unknown[]).map((v) => JSON.stringify([v]));
  // Offsets inside a larger buffer too: the four-byte reads start at every alignment.
  for (const shift of [0, 1, 2, 3]) {
    const padded = Buffer.concat([Buffer.alloc(shift), Buffer.from(text)]).subarray(shift);
    for (const cut of [1, 3, 4, 5, 8, 13, 64, 1000]) {
      assert.deepEqual(split(padded, cut).elements.map((e) => JSON.stringify(JSON.parse(e))), expected, `shift ${shift}, chunks of ${cut}`);
    }
  }
});

test('what a string may not hold (a control character, a bad escape) does not move the cuts: the element is refused later', () => {
  const long = 'x'.repeat(70);
  const elements = [`"${long}\u0001,]${long}"`, `{"k":"\\q,]\\u00e9\\u12"}`, `"${long}\\\\"`, '7'];
  const text = Buffer.from(`[${elements.join(',')}]`, 'latin1');
  for (const cut of [1, 2, 5, 16, 17, 64, 1000]) {
    assert.deepEqual(split(text, cut).elements, elements.map((e) => `[${e}]`), `chunks of ${cut}`);
  }
});

test('a byte order mark may open the answer, split across chunks too', () => {
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[1,2]')]);
  for (const cut of [1, 2, 8]) assert.deepEqual(split(bom, cut).elements, ['[1]', '[2]']);
});

test('an empty array has no elements and closes', () => {
  const r = split(' [ ] ', 1);
  assert.deepEqual(r.elements, []);
  assert.equal(r.closed, true);
});

test('what is not an array of values is refused, with a reason', () => {
  assert.equal(split('{"a":1}', 3).problem, 'the answer is not a JSON array');
  assert.equal(split('[1] x', 2).problem, 'extra data after the JSON value');
  assert.equal(split('[1,]', 1).problem, 'a value is missing after a comma');
  assert.equal(split(Buffer.from([0xef, 0x20, 0x5b, 0x5d]), 1).problem, 'the answer is not a JSON array');
  // Cut off: not refused by the splitter, but never closed (the reader decides).
  const cut = split('[{"a":"b', 2);
  assert.equal(cut.problem, undefined);
  assert.equal(cut.closed, false);
});
