/** `magma-gateway report [<admin-url>]`: GET /gateway/experiments for a terminal, the verdict first. */
import { writeFileSync } from 'node:fs';
import {
  adminHeaders, authHint, baseUrl, cell, commandArgs, commandFailed, DEFAULT_ADMIN_URL, errorText, flagOrPositional, processIo,
  positiveOption, table, type CommandIo,
} from './args.js';
import { isJsonObject } from '../protocol/schemas.js';
import { ROOT_AGENT } from '../config/schema.js';
import type { ExperimentReport, ExperimentsReport } from '../experiments/report/report.js';
import type { ArmReport } from '../experiments/arm-counts.js';
import type { Secondary } from '../experiments/report/analysis.js';
import type { Comparison } from '../experiments/report/comparison.js';
import { metricName, pValueText, ptsInterval, signed } from '../experiments/report/verdict.js';
import type { StrataReport } from '../experiments/report/strata.js';

export const REPORT_USAGE = `usage: magma-gateway report [<admin-url>] [--agent <name>] [--token <token>] [--json] [--timeout <seconds>] [--trajectories <file>]
       magma-gateway report [--url <admin-url>] [--agent <name>] [--token <token>] [--json] [--timeout <seconds>]
  Prints the A/B and ensemble report of a running gateway (GET /gateway/experiments on its admin listener).
  --url <url>     the gateway's admin listener (admin.listen), default ${DEFAULT_ADMIN_URL} (or give it as the argument)
  --agent <name>  only this agent's experiments: a virtual agent's name, or "${ROOT_AGENT}" for the top-level routes
  --token <t>     admin bearer token for /gateway/* (default: env GATEWAY_ADMIN_TOKEN)
  --json          print the report as JSON
  --timeout <s>   request deadline (default 30)
  --trajectories <file>  also write one row per trajectory to <file> (CSV when it ends in .csv, else JSON lines)
  exit code: 0 printed, 1 the gateway could not be read, 2 usage error
`;

const REPORT_FLAGS = {
  url: { type: 'string' },
  agent: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  timeout: { type: 'string' },
  trajectories: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function ms(x: number | null): string {
  return x === null ? '-' : x >= 100 ? String(Math.round(x)) : x.toFixed(1);
}

function ci(c: [number, number] | null): string {
  return c === null ? '' : ` [${pct(c[0])}, ${pct(c[1])}]`;
}

function share(x: number | null): string {
  return x === null ? '-' : pct(x);
}

function num(x: number | null): string {
  return x === null ? '-' : x.toFixed(2);
}

function topCodes(codes: Record<string, number>, n = 3): string {
  const entries = Object.entries(codes).sort((x, y) => y[1] - x[1]);
  if (entries.length === 0) return '-';
  const shown = entries.slice(0, n).map(([c, k]) => `${c} ${k}`);
  return entries.length > n ? `${shown.join(', ')}, +${entries.length - n} more` : shown.join(', ');
}

const HEAD = ['ARM', 'WEIGHT', 'TRAJ', 'STEPS', 'LINES OK/ALL', 'TOOL SUCCESS [95% CI]', 'OUTCOMES [95% CI]', 'COVERAGE',
  'STAGES/TRAJ', 'ENV ERR', 'ERR CAND', 'CROSSED', 'P50 MS', 'P95 MS', 'CALLS FAILED', 'TOP ERROR CODES'];
const RIGHT = [false, true, true, true, true, true, true, true, true, true, true, true, true, true, true, false];
const TABLE_UNITS = 'ENV ERR, CROSSED: share of trajectories; ERR CAND: share of trajectories with an error candidate (of an ensemble member\'s own candidates: "/cand"); P50/P95 MS: the sub-requests that served the arm\'s steps, one per step leg, failed and timed-out ones included (CALLS FAILED: their share)';

function armRow(a: ArmReport): string[] {
  const { tool_success: t, outcomes: o } = a;
  return [
    a.member ? a.arm : `${a.arm} (fallback)`,
    a.member ? String(a.weight) : '-',
    String(a.trajectories),
    String(a.steps),
    `${t.successes}/${t.lines}`,
    t.rate === null ? '-' : `${pct(t.rate)}${ci(t.ci95)}`,
    o.rate === null ? '-' : `${o.successes}/${o.reported} ${pct(o.rate)}${ci(o.ci95)}`,
    share(a.outcomes.coverage),
    num(a.stages_per_trajectory),
    share(a.env_error_share),
    a.error_candidate_share_of === 'candidates' ? `${share(a.error_candidate_share)}/cand` : share(a.error_candidate_share),
    share(a.crossover.share),
    ms(a.latency_ms.p50),
    ms(a.latency_ms.p95),
    // A gateway older than the failed-call count sends none.
    a.latency_ms.failed_share === undefined ? '-' : share(a.latency_ms.failed_share),
    topCodes(a.error_codes),
  ].map(cell);
}

/** Under a sample-ratio mismatch a win is no reason to stop. */
function stopAdvice(crossed: boolean, trustworthy: boolean): string {
  if (!trustworthy) return ' -> do not stop on this: the assignment is off (SRM); fix the cause and restart';
  return crossed ? ' -> you may stop: the arms differ' : ' -> keep running (or stop and report this interval)';
}

function diff(c: Comparison, d: number, lo: number, hi: number): string {
  if (c.outcome_kind === 'score') return `${signed(d)} [${lo.toFixed(3)}, ${hi.toFixed(3)}]`;
  return ptsInterval(d, lo, hi);
}

function comparisonLines(c: Comparison, trustworthy: boolean): string[] {
  const what = `${cell(c.arm)} - ${cell(c.control)}, ${metricName(c)}`;
  const out = [`${c.primary ? 'PRIMARY' : 'also'} ${what} (${cell(c.label)}):`];
  if (c.primary) {
    const q = c.sequential;
    out.push(
      q === null
        ? `  always-valid: n/a (${cell(c.sequential_reason ?? 'not computable')})`
        : `  always-valid: ${diff(c, q.difference, q.ci95[0], q.ci95[1])}, ${pValueText(q.p_value)}${stopAdvice(q.p_value < q.alpha, trustworthy)}`,
    );
  }
  const f = c.fixed;
  out.push(
    f === null
      ? `  fixed: n/a (${cell(c.fixed_reason ?? 'not computable')})`
      : `  fixed: ${diff(c, f.difference, f.ci95[0], f.ci95[1])}, ${pValueText(f.p_value)} (${cell(f.method)}; valid only at a number of units fixed in advance, read once)`,
  );
  return out;
}

function secondaryLine(s: Secondary): string {
  const f = s.fixed;
  const share = s.metric.endsWith('_share');
  const v = f === null
    ? `n/a (${cell(s.fixed_reason ?? '')})`
    : share
      ? `${ptsInterval(f.difference, f.ci95[0], f.ci95[1])} (share of trajectories)`
      : `${signed(f.difference)} [${signed(f.ci95[0])}, ${signed(f.ci95[1])}] per trajectory`;
  return `  ${cell(s.arm)} - ${cell(s.control)} ${s.metric}: ${v}`;
}

function strataLines(s: StrataReport): string[] {
  const out = [`strata by ${cell(s.by)} (${cell(s.label)}; the first ${s.max} values seen have their own, later ones are "other"):`];
  for (const v of s.values) {
    const units = v.arms.map((a) => `${cell(a.arm)} ${a.units}`).join(', ');
    const cmp = v.comparisons.map((c) => (c.fixed === null ? `n/a (${cell(c.fixed_reason ?? '')})` : `${diff(c, c.fixed.difference, c.fixed.ci95[0], c.fixed.ci95[1])}, ${pValueText(c.fixed.p_value)}`));
    out.push(`  ${cell(v.value)} (slot ${v.slot}): ${units}${cmp.length > 0 ? `; ${cmp.join('; ')}` : ''}`);
  }
  // The strata compare the primary metric: a score on its own scale, a rate in points.
  const score = s.values.some((v) => v.comparisons.some((c) => c.outcome_kind === 'score'));
  for (const p of s.post_stratified) {
    const f = p.fixed;
    const d = f === null ? '' : score ? `${f.difference.toFixed(3)} [${f.ci95[0].toFixed(3)}, ${f.ci95[1].toFixed(3)}]` : ptsInterval(f.difference, f.ci95[0], f.ci95[1]);
    out.push(`  post-stratified ${cell(p.arm)} - ${cell(p.control)}: ${f === null ? `n/a (${cell(p.reason ?? '')})` : `${d}, ${pValueText(f.p_value)} over ${f.strata_used} strata`} (descriptive)`);
  }
  return out;
}

function unitLine(r: ExperimentReport): string {
  return r.unit === 'key'
    ? `unit: key (assign_by ${cell(r.assign_by ?? '?')}): every trajectory of a key has one arm; comparisons and the SRM count keys`
    : 'unit: trajectory';
}

function experimentBlock(r: ExperimentReport): string[] {
  const e = r.experiment;
  const out = [`agent ${cell(r.agent)} (${cell(r.path)}) route ${cell(r.route)}: ${r.kind}, experiment ${cell(e.id)}${e.name === null ? '' : ` "${cell(e.name)}"`}${e.started_at === null ? '' : ` since ${e.started_at}`}, control ${cell(r.control)}`];
  // A gateway older than the verdict sends none.
  const v: ExperimentReport['verdict'] | undefined = r.verdict;
  if (v !== undefined) out.push(`VERDICT ${cell(v.text)}`);
  if (!r.trustworthy) out.push('NOT TRUSTWORTHY');
  for (const w of r.warnings) out.push(`! ${cell(w)}`);
  if (r.kind === 'split') out.push(unitLine(r));
  out.push(...table(HEAD, RIGHT, r.arms.map(armRow)), `  (${TABLE_UNITS})`);
  for (const c of r.comparisons.filter((x) => x.primary)) out.push(...comparisonLines(c, r.trustworthy));
  for (const c of r.comparisons.filter((x) => !x.primary)) out.push(...comparisonLines(c, r.trustworthy));
  if (r.strata !== null) out.push(...strataLines(r.strata));
  if (r.secondary.length > 0) {
    out.push('secondary (descriptive, never a stopping rule):');
    for (const s of r.secondary) out.push(secondaryLine(s));
  }
  out.push('');
  return out;
}

export function formatReport(report: ExperimentsReport): string {
  const out: string[] = [`experiments (store: ${report.store}, at ${report.generated_at})`, ''];
  if (report.experiments.length === 0) out.push('no route with a split or an ensemble in the current config', '');
  for (const r of report.experiments) out.push(...experimentBlock(r));
  if (report.earlier.length > 0) {
    out.push('earlier experiments (ended; never summed with the current ones):');
    for (const e of report.earlier) {
      const arms = e.arms.map((a) => `${cell(a.arm)} ${a.trajectories}`).join(', ');
      out.push(`  ${cell(e.agent)}/${cell(e.route)} ${cell(e.experiment.id)} ${e.experiment.started_at ?? '?'} .. ${e.ended_at ?? '?'}: ${arms || 'no trajectories'}`);
    }
    out.push('');
  }
  out.push('Stop rule: you may stop the first time the PRIMARY always-valid p is below its alpha (0.05, or 0.05/(k-1) with k arms; or its interval excludes 0),');
  out.push('or at any time for any reason and report the always-valid interval. Under a sample-ratio mismatch, do not stop on a win.');
  out.push('Details: docs/experiments.md.');
  return `${out.join('\n')}\n`;
}

function isReport(v: unknown): v is ExperimentsReport {
  return isJsonObject(v) && Array.isArray(v.experiments) && Array.isArray(v.earlier) && typeof v.store === 'string' && typeof v.generated_at === 'string';
}

function reportForAgent(report: ExperimentsReport, agent: string): ExperimentsReport | undefined {
  const experiments = report.experiments.filter((e) => e.agent === agent);
  if (experiments.length === 0) return undefined;
  return { ...report, experiments, earlier: report.earlier.filter((e) => e.agent === agent) };
}

export async function reportCommand(argv: string[], io: CommandIo = processIo): Promise<number> {
  const a = commandArgs(argv, REPORT_FLAGS, 1, { name: 'report', usage: REPORT_USAGE, io }, (parsed) => ({
    values: parsed.values,
    base: baseUrl(flagOrPositional(parsed, 'url', 'admin URL') ?? DEFAULT_ADMIN_URL, 'admin URL'),
    seconds: positiveOption(parsed.values.timeout, '--timeout', 30),
  }));
  if ('exit' in a) return a.exit;
  const { values, base, seconds } = a.args;
  const endpoint = `${base}/gateway/experiments`;
  const headers = adminHeaders(values.token, { accept: 'application/json' });

  let body: unknown;
  try {
    const res = await fetch(endpoint, { headers, signal: AbortSignal.timeout(Math.ceil(seconds * 1000)) });
    const text = await res.text();
    if (!res.ok) return commandFailed(io, 'report', `${endpoint} answered HTTP ${res.status}${authHint(res.status)}: ${cell(text).slice(0, 200)}`);
    body = JSON.parse(text);
  } catch (err) {
    return commandFailed(io, 'report', `cannot read ${endpoint}: ${errorText(err)}`);
  }
  if (!isReport(body)) return commandFailed(io, 'report', `${endpoint} did not answer an experiments report`);
  let shown: ExperimentsReport = body;
  if (typeof values.agent === 'string') {
    const one = reportForAgent(body, values.agent);
    if (one === undefined) {
      const known = [...new Set(body.experiments.map((e) => e.agent))].map(cell).join(', ') || 'none with an experiment';
      return commandFailed(io, 'report', `the gateway has no agent "${cell(values.agent)}" (agents: ${known})`);
    }
    shown = one;
  }
  io.out(values.json ? `${JSON.stringify(shown, null, 2)}\n` : formatReport(shown));
  if (typeof values.trajectories === 'string') {
    const file = values.trajectories;
    const csv = file.endsWith('.csv');
    try {
      const res = await fetch(`${endpoint}/trajectories${csv ? '?format=csv' : ''}`, { headers, signal: AbortSignal.timeout(Math.ceil(seconds * 1000)) });
      const text = await res.text();
      if (!res.ok) return commandFailed(io, 'report', `${endpoint}/trajectories answered HTTP ${res.status}: ${cell(text).slice(0, 200)}`);
      writeFileSync(file, text);
    } catch (err) {
      return commandFailed(io, 'report', `cannot write the trajectories to ${file}: ${errorText(err)}`);
    }
  }
  return 0;
}
