import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { test } from 'node:test';
import { firstInvalidUtf8 } from '../../src/protocol/json/utf8.js';

test('the first invalid UTF-8 byte is found where isUtf8 refuses, and none in valid text', () => {
  const cases: [number[], number][] = [
    [[0x61, 0x62], -1],
    [[...Buffer.from('é€😀')], -1],
    [[0x61, 0xff], 1],
    [[0x61, 0xc3], 1], // truncated
    [[0xc0, 0xaf], 0], // overlong
    [[0xe0, 0x80, 0xaf], 0], // overlong
    [[0xed, 0xa0, 0x80], 0], // a surrogate
    [[0xf4, 0x90, 0x80, 0x80], 0], // above U+10FFFF
    [[0x61, 0xe2, 0x82, 0x61], 1],
    [[0x80], 0],
  ];
  for (const [bytes, at] of cases) {
    const b = Buffer.from(bytes);
    assert.equal(firstInvalidUtf8(b), at, `${b.toString('hex')}`);
    assert.equal(isUtf8(b), at === -1, `isUtf8 agrees on ${b.toString('hex')}`);
  }
});
