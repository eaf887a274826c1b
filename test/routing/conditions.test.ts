/**
 * glob and regex operators run on client text (docs/routing.md#routes): globs are matched without backtracking
 * (routing/glob.ts) and give the same answers as their regex form; glob and regex only test strings up to
 * PATTERN_MAX_CHARS characters, a longer value never matches them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileCondition, PATTERN_MAX_CHARS } from '../../src/routing/conditions.js';
import { compileGlob, globToRegExp } from '../../src/patterns/glob.js';

test('glob and regex test strings up to PATTERN_MAX_CHARS; longer ones never match them', () => {
  const glob = compileCondition({ glob: 'a*' });
  const regex = compileCondition({ regex: '^a' });
  const atBound = 'a'.repeat(PATTERN_MAX_CHARS);
  const over = atBound + 'a';
  assert.equal(glob(atBound), true);
  assert.equal(regex(atBound), true);
  assert.equal(glob(over), false);
  assert.equal(regex(over), false);
  assert.equal(glob(['b', over, 'ab']), true, 'a short element of a list still matches');
  // Equality and contains do not backtrack and see the whole value.
  assert.equal(compileCondition({ contains: 'zz' })(over + 'zz'), true);
  assert.equal(compileCondition(over)(over), true);
});

test('a glob with many stars on the longest value tested finishes (its regex form would not)', () => {
  const glob = compileCondition({ glob: '*a*a*a*a*a*a*b' });
  assert.equal(glob('a'.repeat(PATTERN_MAX_CHARS)), false);
  assert.equal(glob('a'.repeat(PATTERN_MAX_CHARS - 1) + 'b'), true);
  assert.equal(compileGlob('*[!x]*?*b')('ax' + 'x'.repeat(3000) + 'b'), true);
});

test('the glob matcher agrees with the glob as a regex on 30,000 random globs and texts', () => {
  const globParts = ['*', '?', 'a', 'b', '[ab]', '[!a]', '[a-c]', '\\*', '.', '🤖', '[]a]', '\n'];
  const textParts = ['a', 'b', 'c', '*', '.', '🤖', ']', '\n', 'x'];
  let seed = 7;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let k = 0; k < 30_000; k++) {
    let glob = '';
    for (let n = rnd(6); n > 0; n--) glob += globParts[rnd(globParts.length)];
    let text = '';
    for (let n = rnd(8); n > 0; n--) text += textParts[rnd(textParts.length)];
    assert.equal(compileGlob(glob)(text), globToRegExp(glob).test(text), `${JSON.stringify(glob)} on ${JSON.stringify(text)}`);
  }
});

test('a malformed glob is refused by the matcher with the same message as its regex form', () => {
  for (const bad of ['a\\', '[ab', '[z-a]']) {
    assert.throws(() => compileGlob(bad), (err: unknown) => {
      assert.throws(() => globToRegExp(bad), { message: (err as Error).message });
      return /invalid glob/.test((err as Error).message);
    });
  }
});
