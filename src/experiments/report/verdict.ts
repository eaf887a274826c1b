/**
 * The verdict of one experiment (docs/experiments.md#the-verdict, which lists the states and when each applies),
 * read from the report's own pieces, so the same report gives the same verdict on every replica. First match wins.
 */
import type { Analysis } from './analysis.js';
import { burnInUnit, metricSums, outcomeKind, type AnalysisOptions, type ArmInput, type Comparison } from './comparison.js';
import { perArm, type Srm } from './sample-ratio.js';

export type VerdictState = 'collecting' | 'keep_running' | 'arms_differ' | 'planned_size_reached' | 'not_trustworthy';

export interface Progress {
  have: number;
  need: number;
  unit: string;
}

export interface Verdict {
  state: VerdictState;
  /** Set for `arms_differ` only. */
  arm: string | null;
  text: string;
  /** Set while `collecting` only. */
  progress: Record<string, Progress> | null;
}

const pctOf = (x: number, of: number): string => (of > 0 ? `${((100 * x) / of).toFixed(1)}%` : 'n/a');

function pts(x: number): string {
  const v = (x * 100).toFixed(1);
  return x > 0 ? `+${v}` : v;
}

export function ptsInterval(d: number, lo: number, hi: number): string {
  return `${pts(d)} pts [${pts(lo)}, ${pts(hi)}]`;
}

export function pValueText(p: number): string {
  return p < 0.001 ? 'p < 0.001' : `p = ${p.toFixed(3)}`;
}

export function signed(x: number): string {
  return `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
}

export function metricName(c: Comparison): string {
  if (c.metric !== 'outcome') return 'tool success';
  return c.outcome_kind === 'score' ? 'episode score' : 'episode success';
}

function interval(c: Comparison): string {
  const q = c.sequential;
  if (q === null) return `n/a (${c.sequential_reason ?? 'not computable'})`;
  const p = pValueText(q.p_value);
  if (c.outcome_kind === 'score') return `${signed(q.difference)} [${signed(q.ci95[0])}, ${signed(q.ci95[1])}], ${p}`;
  return `${ptsInterval(q.difference, q.ci95[0], q.ci95[1])}, ${p}`;
}

function notTrustworthy(i: VerdictInput): string | null {
  if (i.srm?.flagged === true) {
    const s = i.srm;
    const p = s.p_value === null ? '' : `, p = ${s.p_value.toExponential(2)}`;
    const cause = s.cause === null ? 'no arm was rerouted, so something else chose the arms (a filter, a client, a restart)' : s.cause;
    return `not trustworthy: sample-ratio mismatch (${s.unit === 'key' ? 'keys' : 'trajectories'} ${perArm(s.observed)}; expected ${perArm(s.expected)}${p}); cause: ${cause}. Do not stop on a win: fix the cause, then reset the experiment`;
  }
  if (i.primary !== 'outcome') return null;
  if (i.mixed) return 'not trustworthy: both success and score outcomes were posted to this experiment, and the primary outcome comparison is refused; reset the experiment and import one kind';
  if (i.outcomeCoverage?.flagged === true) {
    const cov = i.arms.map((a) => `${a.arm} ${Math.min(a.outcomes, a.units)}/${a.units} (${pctOf(Math.min(a.outcomes, a.units), a.units)})`).join(', ');
    return `not trustworthy: outcome coverage differs between arms (${cov}; p = ${i.outcomeCoverage.p_value.toExponential(2)}): episodes were matched unevenly, which biases the episode-success comparison; check the import's unmatched and ambiguous counts before reading it`;
  }
  return null;
}

function collecting(i: VerdictInput): Verdict | null {
  const short = i.arms.filter((a) => a.burnIn < i.burnIn);
  if (short.length === 0) return null;
  const progress = Object.fromEntries(i.arms.map((a) => [a.arm, { have: a.burnIn, need: i.burnIn, unit: i.burnInUnit }]));
  // Most needed first, so the arm that holds the result back is named first; ties in the arms' order.
  const missing = short.map((a) => ({ arm: a.arm, more: i.burnIn - a.burnIn })).sort((x, y) => y.more - x.more);
  const list = missing.map((m, k) => (k === 0 ? `${m.more} more ${i.burnInUnit} on ${m.arm}` : `${m.more} on ${m.arm}`)).join(', ');
  const none = i.primary === 'outcome' && i.arms.every((a) => a.outcomes === 0);
  const hint = none ? ' (import the episodes: magma-gateway outcomes import <BENCH results dir>)' : '';
  return { state: 'collecting', arm: null, text: `collecting: ${list} before the always-valid interval${hint}`, progress };
}

/** The treatment with the highest lower bound above 0, else the control. */
function better(differ: readonly Comparison[]): string {
  const lo = (c: Comparison): number => c.sequential?.ci95[0] ?? 0;
  const best = differ.filter((c) => lo(c) > 0).reduce<Comparison | undefined>((b, c) => (b === undefined || lo(c) > lo(b) ? c : b), undefined);
  return best?.arm ?? differ[0]?.control ?? '';
}

function excludesZero(c: Comparison): boolean {
  const q = c.sequential;
  return q !== null && (q.ci95[0] > 0 || q.ci95[1] < 0);
}

/** A verdict that names no arm and shows no progress. */
const said = (state: VerdictState, text: string): Verdict => ({ state, arm: null, text, progress: null });

function verdict(i: VerdictInput): Verdict {
  const bad = notTrustworthy(i);
  if (bad !== null) return said('not_trustworthy', bad);
  if (i.kind === 'ensemble') {
    return said('keep_running', 'ensemble: every input asks each member, so the members are not randomized and no verdict compares them; their figures are descriptive');
  }
  const coll = collecting(i);
  if (coll !== null) return coll;
  const cmp = i.comparisons.filter((c) => c.primary);
  if (cmp.length === 0) return said('keep_running', 'keep running: a split needs two member arms with units to compare');
  const differ = cmp.filter(excludesZero);
  if (differ.length > 0) {
    const arm = better(differ);
    const lines = differ.map((c) => {
      const [win, lose] = (c.sequential?.difference ?? 0) > 0 ? [c.arm, c.control] : [c.control, c.arm];
      return `${win} is better than ${lose} on ${metricName(c)} (${c.arm} - ${c.control} always-valid ${interval(c)})`;
    });
    const open = cmp.length > differ.length ? `; ${cmp.filter((c) => !excludesZero(c)).map((c) => `${c.arm} - ${c.control} undecided`).join(', ')}` : '';
    return { state: 'arms_differ', arm, text: `${lines.join('; ')}${open}: you may stop and report this interval`, progress: null };
  }
  const missing = cmp.find((c) => c.sequential === null);
  if (missing !== undefined) {
    // Past the burn-in, yet no interval: no robot line, no variation yet, or outcomes of both kinds.
    const reason = missing.sequential_reason ?? 'not computable';
    return said('keep_running', `keep running: no always-valid interval yet on ${metricName(missing)} for ${missing.arm} - ${missing.control} (${reason})`);
  }
  const units = (c: Comparison): number => i.arms.filter((a) => a.arm === c.arm || a.arm === c.control).reduce((s, a) => s + a.burnIn, 0);
  const have = Math.min(...cmp.map(units));
  const each = cmp.map((c) => `${c.arm} - ${c.control} ${interval(c)}`).join('; ');
  const metric = metricName(cmp[0]!); // cmp is not empty (checked above)
  if (have >= i.plannedTrajectories) {
    return said('planned_size_reached', `planned size reached: ${have} ${i.burnInUnit} of ${i.plannedTrajectories} planned, and no difference between the arms on ${metric}: stop and report the always-valid interval, ${each}`);
  }
  return said('keep_running', `keep running: no difference yet on ${metric} (always-valid ${each}); ${i.plannedTrajectories - have} more ${i.burnInUnit} to the planned ${i.plannedTrajectories}, or stop now and report this interval`);
}

/** What the verdict reads of the report; `mixed`: both outcome kinds were posted, so the outcome comparison is refused. */
function verdictInput(kind: 'split' | 'ensemble', members: readonly ArmInput[], analysis: Analysis, srm: Srm | null, o: AnalysisOptions) {
  const posted = outcomeKind(members);
  const k = posted === 'score' ? 'score' : 'success';
  const unit = o.unit ?? 'trajectory';
  return {
    kind,
    primary: o.primary,
    srm,
    outcomeCoverage: analysis.outcome_coverage,
    mixed: posted === 'mixed',
    arms: members.map((m) => ({ arm: m.arm, units: m.counts.units, outcomes: m.counts.outcomeReported + m.counts.scoreN, burnIn: metricSums(o.primary, k, unit, m).units })),
    comparisons: kind === 'split' ? analysis.comparisons : [],
    burnIn: o.burnIn,
    burnInUnit: burnInUnit(o.primary, k, unit),
    plannedTrajectories: o.plannedTrajectories,
  };
}

type VerdictInput = ReturnType<typeof verdictInput>;

export function experimentVerdict(kind: 'split' | 'ensemble', members: readonly ArmInput[], analysis: Analysis, srm: Srm | null, o: AnalysisOptions): Verdict {
  return verdict(verdictInput(kind, members, analysis, srm, o));
}
