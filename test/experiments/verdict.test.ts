/**
 * The verdict (docs/experiments.md#the-verdict) on fixed counts through the real analysis, as the report computes
 * it: every state, which check wins when several apply, the better arm, and the progress while collecting.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyse } from '../../src/experiments/report/analysis.js';
import type { AnalysisOptions, ArmInput } from '../../src/experiments/report/comparison.js';
import { sampleRatio } from '../../src/experiments/report/sample-ratio.js';
import { experimentVerdict, type Verdict } from '../../src/experiments/report/verdict.js';
import { emptyArm, type ArmCounts } from '../../src/experiments/arm-counts.js';

const OUTCOME: AnalysisOptions = { primary: 'outcome', plannedTrajectories: 200, burnIn: 20 };
const TOOL: AnalysisOptions = { primary: 'tool_success', plannedTrajectories: 200, burnIn: 20 };

function arm(name: string, over: Partial<ArmCounts>, weight = 50): ArmInput {
  return { arm: name, weight, counts: { ...emptyArm(), ...over } };
}

/** `units` trajectories, `reported` of them with a success outcome, `successes` of those successes. */
function episodes(name: string, units: number, reported: number, successes: number): ArmInput {
  return arm(name, { units, outcomeReported: reported, outcomeSuccess: successes });
}

function judge(members: ArmInput[], o: AnalysisOptions, kind: 'split' | 'ensemble' = 'split'): Verdict {
  const control = members[0]!.arm;
  return experimentVerdict(kind, members, analyse(members, control, o), kind === 'split' ? sampleRatio(members) : null, o);
}

test('collecting: how many more of the burn-in unit each arm needs, most needed first, with the progress per arm', () => {
  const v = judge([episodes('qwen', 30, 15, 7), episodes('gpt', 30, 8, 4)], OUTCOME);
  assert.equal(v.state, 'collecting');
  assert.equal(v.arm, null);
  assert.equal(v.text, 'collecting: 12 more trajectories with an outcome on gpt, 5 on qwen before the always-valid interval');
  assert.deepEqual(v.progress, {
    qwen: { have: 15, need: 20, unit: 'trajectories with an outcome' },
    gpt: { have: 8, need: 20, unit: 'trajectories with an outcome' },
  });
  // 20 trajectories each and no outcome: the unit is the outcome, and the text says how to get them.
  const none = judge([episodes('qwen', 20, 0, 0), episodes('gpt', 20, 0, 0)], OUTCOME);
  assert.equal(none.text, 'collecting: 20 more trajectories with an outcome on qwen, 20 on gpt before the always-valid interval (import the episodes: magma-gateway outcomes import <BENCH results dir>)');
  // With tool success primary, trajectories are the unit; an arm past the burn-in is not named.
  const tool = judge([arm('a', { units: 25, unitsWithLines: 25, s: 40, n: 50, ss: 80, nn: 110, sn: 90 }), arm('b', { units: 19 })], TOOL);
  assert.equal(tool.text, 'collecting: 1 more trajectories on b before the always-valid interval');
  assert.deepEqual(tool.progress?.a, { have: 25, need: 20, unit: 'trajectories' });
});

test('arms_differ: the always-valid interval excludes 0; the better arm is named, treatment or control', () => {
  const v = judge([episodes('talker', 30, 30, 5), episodes('actor', 30, 30, 28)], OUTCOME);
  assert.equal(v.state, 'arms_differ');
  assert.equal(v.arm, 'actor');
  assert.match(v.text, /^actor is better than talker on episode success \(actor - talker always-valid \+76\.7 pts \[\+\d+\.\d, \+\d+\.\d\], p < 0\.001\): you may stop and report this interval$/);
  assert.equal(v.progress, null);
  const worse = judge([episodes('talker', 30, 30, 28), episodes('actor', 30, 30, 5)], OUTCOME);
  assert.equal(worse.state, 'arms_differ');
  assert.equal(worse.arm, 'talker');
  assert.match(worse.text, /^talker is better than actor on episode success \(actor - talker always-valid -76\.7 pts \[-/);
});

test('arms_differ with three arms: the best treatment of those that differ, the undecided one named', () => {
  const v = judge([episodes('a', 40, 40, 10), episodes('b', 40, 40, 36), episodes('c', 40, 40, 12)], OUTCOME);
  assert.equal(v.state, 'arms_differ');
  assert.equal(v.arm, 'b');
  assert.match(v.text, /^b is better than a on episode success .*; c - a undecided: you may stop and report this interval$/);
});

test('keep_running, then planned_size_reached at the planned units with no difference', () => {
  const v = judge([episodes('a', 50, 50, 25), episodes('b', 50, 50, 27)], OUTCOME);
  assert.equal(v.state, 'keep_running');
  assert.match(v.text, /^keep running: no difference yet on episode success \(always-valid b - a \+4\.0 pts \[-\d+\.\d, \+\d+\.\d\], p = 1\.000\); 100 more trajectories with an outcome to the planned 200, or stop now and report this interval$/);
  const done = judge([episodes('a', 100, 100, 50), episodes('b', 100, 100, 52)], OUTCOME);
  assert.equal(done.state, 'planned_size_reached');
  assert.equal(done.arm, null);
  assert.match(done.text, /^planned size reached: 200 trajectories with an outcome of 200 planned, and no difference between the arms on episode success: stop and report the always-valid interval, b - a \+2\.0 pts \[-/);
});

test('keep_running past the burn-in without an interval: the reason is named', () => {
  // 25 trajectories per arm and no robot line observed: tool success has no interval to read.
  const v = judge([arm('a', { units: 25 }), arm('b', { units: 25 })], TOOL);
  assert.equal(v.state, 'keep_running');
  assert.equal(v.text, 'keep running: no always-valid interval yet on tool success for b - a (needs 2 trajectories with a tool line per arm)');
});

test('not_trustworthy: a sample-ratio mismatch names its cause and wins over collecting', () => {
  const v = judge([arm('qwen', { units: 30 }), arm('gpt', { rerouted: { not_ready: 30, ejected: 0 } })], TOOL);
  assert.equal(v.state, 'not_trustworthy');
  assert.equal(v.arm, null);
  assert.match(v.text, /^not trustworthy: sample-ratio mismatch \(trajectories qwen 30, gpt 0; expected qwen 15, gpt 15, p = \d\.\d\de-\d+\); cause: 30 trajectories rerouted from gpt: not ready\. Do not stop on a win/);
});

test('not_trustworthy: outcome coverage that differs between arms, when the outcome is primary', () => {
  // 2 x 2 chi-square of matched/unmatched: [[40, 0], [20, 20]] -> 26.67, p = 2.4e-7.
  // python3 -c "from scipy.stats import chi2_contingency as c; print(c([[40,0],[20,20]], correction=False)[1])" -> 2.4175638811190183e-07
  const members = [episodes('a', 40, 40, 20), episodes('b', 40, 20, 20)];
  const v = judge(members, OUTCOME);
  assert.equal(v.state, 'not_trustworthy');
  assert.match(v.text, /^not trustworthy: outcome coverage differs between arms \(a 40\/40 \(100\.0%\), b 20\/40 \(50\.0%\); p = 2\.42e-7\): episodes were matched unevenly/);
  // The same counts with tool success primary: the outcomes are descriptive, so coverage does not decide.
  assert.notEqual(judge(members, TOOL).state, 'not_trustworthy');
});

test('coverage under 90% in every arm alike is no bias but is said: the comparison reads only the episodes imported', () => {
  const low = [episodes('a', 100, 50, 30), episodes('b', 100, 50, 20)];
  const warning = (m: ArmInput[]): string | undefined => analyse(m, 'a', OUTCOME).warnings.find((w) => w.includes('have no outcome'));
  assert.equal(warning(low), "100 of 200 trajectories have no outcome (coverage 50%): the outcome comparison reads only the episodes imported; import every run's results (episodes still running have none yet)");
  assert.equal(warning([episodes('a', 100, 95, 30), episodes('b', 100, 90, 20)]), undefined);
});

test('not_trustworthy: success and score outcomes posted to one experiment', () => {
  const v = judge([arm('a', { units: 30, outcomeReported: 30, outcomeSuccess: 10 }), arm('b', { units: 30, scoreN: 30, scoreSum: 12, scoreSquares: 9 })], OUTCOME);
  assert.equal(v.state, 'not_trustworthy');
  assert.match(v.text, /both success and score outcomes/);
});

test('an ensemble: no verdict between members that were not randomized', () => {
  const v = judge([episodes('a', 30, 30, 5), episodes('b', 30, 30, 28)], OUTCOME, 'ensemble');
  assert.equal(v.state, 'keep_running');
  assert.equal(v.arm, null);
  assert.match(v.text, /^ensemble: .*not randomized/);
});
