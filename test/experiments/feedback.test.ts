/**
 * Parsing env feedback (docs/protocol-fidelity.md#environment-feedback): every shape seen in the ecosystem,
 * multi-robot steps, and content that is not JSON or not the JSON we know, which must count, never throw.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyFeedback, FEEDBACK_MAX_CHARS, parseEnvFeedback, parseInfos, type FeedbackCounts } from '../../src/experiments/feedback.js';

/** Python json.dumps output: ", " and ": " separators, as the simulator writes it. */
function pyDumps(v: unknown): string {
  return JSON.stringify(v).replace(/","/g, '", "').replace(/":/g, '": ').replace(/},"/g, '}, "');
}

function counts(over: Partial<FeedbackCounts>): FeedbackCounts {
  return { ...emptyFeedback(), ...over };
}

const PICK = { dish_robot: { name: 'pick', arguments: { object: 'plate_1' } } };

test('a robot line that succeeded: one tool_succeeded', () => {
  const content = pyDumps({ infos: 'dish_robot: pick succeed with message: plate_1 grasped', previous_tool_call: PICK });
  assert.ok(content.includes('", "previous_tool_call": {'), content);
  assert.deepEqual(parseEnvFeedback(content), counts({ tool_succeeded: 1 }));
});

test('"The action has completed." has no tool outcome: other (not a metric outcome), not unparsed', () => {
  const content = pyDumps({ infos: 'The action has completed.', previous_tool_call: PICK });
  assert.deepEqual(parseEnvFeedback(content), counts({ other: 1 }));
});

test('{"error": ...} is one env_error', () => {
  assert.deepEqual(parseEnvFeedback('{"error": "the simulator lost the robot"}'), counts({ env_error: 1 }));
});

test('a failed place with a failure_reason: one tool_failed and one failure_reason', () => {
  const content = pyDumps({
    infos: 'table_robot: place failed with message: the table is out of reach',
    previous_tool_call: { table_robot: { name: 'place', arguments: { object: 'plate_1' } } },
    failure_reason: 'out of reach',
  });
  assert.deepEqual(parseEnvFeedback(content), counts({ tool_failed: 1, failure_reason: 1 }));
});

test('multi-robot infos: one outcome per robot line, free-text lines skipped', () => {
  const infos = [
    'dish_robot: pick succeed with message: plate_1 grasped',
    'table_robot: place failed with message: blocked: a cup is in the way',
    'Both robots acted.',
    'wash_robot: wash succeed with message: clean',
  ].join('\n');
  assert.deepEqual(parseEnvFeedback(pyDumps({ infos, previous_tool_call: PICK })), counts({ tool_succeeded: 2, tool_failed: 1 }));
  assert.deepEqual(parseInfos(infos), [
    { robot: 'dish_robot', tool: 'pick', ok: true },
    { robot: 'table_robot', tool: 'place', ok: false },
    { robot: 'wash_robot', tool: 'wash', ok: true },
  ]);
  // CRLF line ends and the "succeeded" tense read the same.
  assert.deepEqual(parseInfos('a: x succeeded with message: ok\r\nb: y failed with message: no'), [
    { robot: 'a', tool: 'x', ok: true },
    { robot: 'b', tool: 'y', ok: false },
  ]);
});

test('a message mentioning "failed" does not count twice; a line starting with free text is not a robot line', () => {
  assert.deepEqual(parseInfos('dish_robot: pick succeed with message: previous attempt failed'), [
    { robot: 'dish_robot', tool: 'pick', ok: true },
  ]);
  assert.deepEqual(parseInfos('note: the gripper failed'), []);
  assert.deepEqual(parseInfos(''), []);
});

test('ASCII escapes from json.dumps decode before the lines are read', () => {
  const content = '{"infos": "dish_robot: pick succeed with message: caf\\u00e9\\ntable_robot: place failed with message: x"}';
  assert.deepEqual(parseEnvFeedback(content), counts({ tool_succeeded: 1, tool_failed: 1 }));
});

test('content that is not JSON, or JSON we cannot read, is unparsed and never throws', () => {
  for (const content of [
    'not json at all',
    '',
    '   ',
    'dish_robot: pick succeed with message: plain text, not JSON',
    '{"infos": "dish_robot: pick succeed with message: cut',
    '{bad json}',
    '[1, 2, 3]',
    '"a JSON string"',
    '42',
    'null',
    '{}',
    '{"previous_tool_call": {"dish_robot": {"name": "pick"}}}',
    '{"infos": 42}',
  ]) {
    assert.deepEqual(parseEnvFeedback(content), counts({ unparsed: 1 }), JSON.stringify(content));
  }
});

test('null or empty error / failure_reason mean nothing to report', () => {
  const content = '{"infos": "dish_robot: pick succeed with message: ok", "error": null, "failure_reason": ""}';
  assert.deepEqual(parseEnvFeedback(content), counts({ tool_succeeded: 1 }));
  assert.deepEqual(parseEnvFeedback('{"error": null}'), counts({ other: 1 }));
});

test('an error together with robot lines counts both; surrounding whitespace is tolerated', () => {
  const content = '\n {"infos": "a: pick failed with message: x\\nb: place succeed with message: y", "error": "sim hiccup"} \n';
  assert.deepEqual(parseEnvFeedback(content), counts({ tool_succeeded: 1, tool_failed: 1, env_error: 1 }));
});

test('infos as a list of lines is read too', () => {
  assert.deepEqual(
    parseEnvFeedback('{"infos": ["a: pick succeed with message: x", "b: place failed with message: y", 7]}'),
    counts({ tool_succeeded: 1, tool_failed: 1 }),
  );
});

test('1 MB of adversarial infos is read in linear time (under 500 ms each)', () => {
  const MB = 1024 * 1024;
  const texts = [
    'a' + ' '.repeat(MB), // one long line, no colon
    ' '.repeat(MB) + 'x', // leading whitespace, no colon
    ':'.repeat(MB), // only colons
    'a:'.repeat(MB / 2), // a colon-rich line
    'robot: '.repeat(MB / 7), // colons and spaces, never a verb
    'r' + ' '.repeat(MB / 2) + ': pick' + ' '.repeat(MB / 2) + 'succeedx', // long runs around the parts
    'a\n'.repeat(MB / 2) + ':', // many colon-free lines, one colon at the very end
    'r: pick succeeded\n'.repeat(MB / 18),
  ];
  for (const text of texts) {
    // The best of three runs, in CPU time: a quadratic scan of 1 MB takes minutes on every run, a linear one a few
    // ms; the bound leaves a busy host (other test files, CI neighbours, the collector's threads) room to spare.
    let ms = Infinity;
    let lines: ReturnType<typeof parseInfos> = [];
    for (let run = 0; run < 3 && ms >= 500; run++) {
      const c0 = process.cpuUsage();
      lines = parseInfos(text);
      const c = process.cpuUsage(c0);
      ms = Math.min(ms, (c.user + c.system) / 1000);
    }
    assert.ok(ms < 500, `${ms.toFixed(1)} ms for ${JSON.stringify(text.slice(0, 20))}...`);
    if (!text.startsWith('r: pick')) assert.deepEqual(lines, []);
    else assert.equal(lines.length, Math.floor(MB / 18));
  }
});

test('the scanner reads the same grammar as before: whitespace, trimmed robot, tenses, word boundary', () => {
  assert.deepEqual(parseInfos('  arm 1 \t:  pick   succeed'), [{ robot: 'arm 1', tool: 'pick', ok: true }]);
  assert.deepEqual(parseInfos('arm: pick succeeded.\r\nb: place failed, with message: x: y failed'), [
    { robot: 'arm', tool: 'pick', ok: true },
    { robot: 'b', tool: 'place', ok: false },
  ]);
  for (const no of [': pick succeed', 'arm: pick succeeds', 'arm: pick failedx', 'arm:pick', 'arm: succeed', 'arm pick succeed', '']) {
    assert.deepEqual(parseInfos(no), [], no);
  }
  assert.deepEqual(parseInfos('arm: a:b failed_not'), []);
  assert.deepEqual(parseInfos('arm: a:b failed-now'), [{ robot: 'arm', tool: 'a:b', ok: false }]);
});

test(`env content longer than FEEDBACK_MAX_CHARS (${FEEDBACK_MAX_CHARS}) is unparsed without being read`, () => {
  const long = JSON.stringify({ infos: 'r: pick succeed\n' + ' '.repeat(FEEDBACK_MAX_CHARS) });
  assert.equal(parseEnvFeedback(long).unparsed, 1);
  assert.equal(parseEnvFeedback(long).tool_succeeded, 0);
});

test('the scanner agrees with the regex it replaced on 20,000 random short texts', () => {
  // The former grammar, kept here as the reference (it is only slow on long lines, not wrong).
  const ROBOT_LINE = /^\s*([^:\s][^:]*?)\s*:\s*(\S+)\s+(succeed|succeeded|failed)\b/;
  const reference = (text: string) =>
    text.split(/\r?\n/).flatMap((line) => {
      const m = ROBOT_LINE.exec(line);
      return m === null ? [] : [{ robot: m[1]!, tool: m[2]!, ok: m[3] !== 'failed' }];
    });
  const parts = [' ', '\t', ':', 'a', 'r1', '_', '.', '\n', '\r\n', '\r', 'succeed', 'succeeded', 'failed', 'x', '\u00a0', 'é'];
  let seed = 42;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let k = 0; k < 20_000; k++) {
    let text = '';
    for (let n = rnd(12); n > 0; n--) text += parts[rnd(parts.length)];
    assert.deepEqual(parseInfos(text), reference(text), JSON.stringify(text));
  }
});
