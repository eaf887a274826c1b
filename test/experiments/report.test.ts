/**
 * `magma-gateway report` against a stub gateway on loopback serving a fixed report (built by the real analysis
 * from fixed counts): what a researcher reads first, `--json`, the admin bearer token (flag or
 * GATEWAY_ADMIN_TOKEN), and readable failures.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { formatReport, reportCommand } from '../../src/commands/report.js';
import type { CommandIo } from '../../src/commands/args.js';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { analyse } from '../../src/experiments/report/analysis.js';
import { sampleRatio, srmWarning } from '../../src/experiments/report/sample-ratio.js';
import { experimentVerdict } from '../../src/experiments/report/verdict.js';
import { armReport, emptyArm, type ArmCounts } from '../../src/experiments/arm-counts.js';

function counts(over: Partial<ArmCounts>): ArmCounts {
  return { ...emptyArm(), ...over };
}

// qwen 30 trajectories, gpt 0 (its backend never ready): a flagged sample-ratio mismatch with its cause.
const QWEN = counts({
  units: 30, unitsWithLines: 28, s: 80, n: 120, ss: 260, nn: 560, sn: 370, steps: 140, stepsSquared: 700, stages: 36, stagesSquared: 50,
  envError: 3, errorCandidate: 1, completed: 139, error: 1, codes: new Map([['gateway_backend_timeout', 1], ['bad\u001b[31mcode', 1]]),
  latency: new Map([[30, 100], [40, 40]]),
});
const GPT = counts({ rerouted: { not_ready: 30, ejected: 0 } });
const MEMBERS = [{ arm: 'qwen', weight: 50, counts: QWEN }, { arm: 'gpt', weight: 50, counts: GPT }];
const SRM = sampleRatio(MEMBERS);
const OPTIONS = { primary: 'tool_success', plannedTrajectories: 200, burnIn: 20 } as const;
const ANALYSIS = analyse(MEMBERS, 'qwen', OPTIONS);

const REPORT: ExperimentsReport = {
  generated_at: '2025-01-01T00:00:00.000Z',
  store: 'redis',
  experiments: [
    {
      agent: 'default', path: '/', route: 'ab', kind: 'split',
      experiment: { id: '0123456789abcdef', name: 'spring', started_at: '2025-01-01T00:00:00.000Z' },
      verdict: experimentVerdict('split', MEMBERS, ANALYSIS, SRM, OPTIONS),
      primary: 'tool_success', control: 'qwen', unit: 'trajectory', assign_by: null, trustworthy: false,
      warnings: [srmWarning(SRM), ...ANALYSIS.warnings], srm: SRM, outcome_coverage: ANALYSIS.outcome_coverage, rejected_tags: 0,
      arms: [
        armReport('qwen', 50, true, QWEN, null),
        armReport('gpt', 50, true, GPT, null),
        armReport('backup', 0, false, counts({ steps: 3, completed: 3 }), null),
      ],
      comparisons: ANALYSIS.comparisons, secondary: ANALYSIS.secondary, strata: null,
    },
  ],
  earlier: [{ agent: 'default', route: 'ab', experiment: { id: 'fedcba9876543210', name: null, started_at: '2024-12-01T00:00:00.000Z' }, ended_at: '2025-01-01T00:00:00.000Z', arms: [{ arm: 'qwen', trajectories: 12 }] }],
};

let server: Server;
let url: string;
let seen: IncomingHttpHeaders[] = [];
let answer: { status: number; body: string } = { status: 200, body: JSON.stringify(REPORT) };

before(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url !== '/gateway/experiments') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CommandIo = { out: (t) => void (out += t), err: (t) => void (err += t) };
  const code = await reportCommand(argv, io);
  return { code, out, err };
}

test('the text: the verdict first, then SRM, then the arms, the primary comparison with its label, the stop rule, secondary', async () => {
  answer = { status: 200, body: JSON.stringify(REPORT) };
  const r = await run(['--url', url]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, formatReport(REPORT));
  const lines = r.out.split('\n');
  const head = lines.findIndex((l) => l.startsWith('agent default (/) route ab: split, experiment 0123456789abcdef "spring"'));
  assert.ok(head > 0, r.out);
  assert.match(lines[head + 1]!, /^VERDICT not trustworthy: sample-ratio mismatch \(trajectories qwen 30, gpt 0; expected qwen 15, gpt 15, p = .*\); cause: 30 trajectories rerouted from gpt: not ready\. Do not stop on a win/);
  assert.equal(lines[head + 2], 'NOT TRUSTWORTHY');
  assert.match(lines[head + 3]!, /^! sample-ratio mismatch \(p = .*\): trajectories qwen 30, gpt 0, expected qwen 15, gpt 15; cause: 30 trajectories rerouted from gpt: not ready/);
  assert.ok(SRM.flagged && SRM.p_value! < 1e-6);
  const row = (arm: string): string[] => lines.find((l) => l.startsWith(`${arm} `))!.trim().split(/\s{2,}/);
  assert.deepEqual(row('qwen').slice(0, 5), ['qwen', '50', '30', '140', '80/120']);
  assert.equal(row('qwen').at(-1), 'bad?[31mcode 1, gateway_backend_timeout 1', 'control characters neutralised');
  assert.deepEqual(row('backup').slice(0, 4), ['backup (fallback)', '-', '0', '3']);
  // The calls-failed share beside the latency, and what each share and time is of, under the table.
  assert.equal(row('qwen').at(-2), '0.0%');
  assert.ok(lines.some((l) => l.startsWith('  (ENV ERR, CROSSED: share of trajectories; ERR CAND: share of trajectories with an error candidate')), r.out);
  const primary = lines.findIndex((l) => l.startsWith('PRIMARY gpt - qwen, tool success (process metric: tool success over observed robot lines, not episode success):'));
  assert.ok(primary > head, r.out);
  assert.match(lines[primary + 1]!, /^ {2}always-valid: n\/a \(needs 20 trajectories per arm\)$/);
  assert.match(lines[primary + 2]!, /^ {2}fixed: n\/a \(/);
  assert.ok(lines.indexOf('secondary (descriptive, never a stopping rule):') > primary);
  assert.ok(lines.some((l) => l.startsWith('  default/ab fedcba9876543210 2024-12-01T00:00:00.000Z .. 2025-01-01T00:00:00.000Z: qwen 12')));
  assert.ok(lines.some((l) => l.startsWith('Stop rule: you may stop the first time the PRIMARY always-valid p is below its alpha')));
});

test('an always-valid result prints the stop rule\'s verdict', () => {
  const withCmp = structuredClone(REPORT);
  const c = withCmp.experiments[0]!.comparisons.find((x) => x.primary)!;
  c.sequential = { difference: 0.125, ci95: [0.02, 0.23], p_value: 0.01, alpha: 0.05, method: 'normal-mixture always-valid (mSPRT)', planned_trajectories: 200, rho2: 0.0397 };
  // The fixture's assignment is flagged (SRM): a win there is no reason to stop.
  assert.ok(formatReport(withCmp).includes('p = 0.010 -> do not stop on this: the assignment is off (SRM)'));
  withCmp.experiments[0]!.trustworthy = true;
  assert.ok(formatReport(withCmp).includes('  always-valid: +12.5 pts [+2.0, +23.0], p = 0.010 -> you may stop: the arms differ'));
  c.sequential = { ...c.sequential, p_value: 0.5, ci95: [-0.1, 0.3] };
  assert.ok(formatReport(withCmp).includes('p = 0.500 -> keep running (or stop and report this interval)'));
});

test('a report from a gateway without the verdict prints as before', () => {
  const old = structuredClone(REPORT) as unknown as { experiments: Record<string, unknown>[] }; // drops a required field on purpose
  delete old.experiments[0]!.verdict;
  const text = formatReport(old as unknown as ExperimentsReport); // the shape an older gateway serves
  assert.ok(!text.includes('VERDICT'));
  assert.ok(text.includes('NOT TRUSTWORTHY'));
});

test('--json prints the report as served', async () => {
  answer = { status: 200, body: JSON.stringify(REPORT) };
  const r = await run(['--url', url, '--json']);
  assert.equal(r.code, 0);
  assert.deepEqual(JSON.parse(r.out), REPORT);
});

test('the admin token: --token, else GATEWAY_ADMIN_TOKEN, sent as a bearer; none without either', async () => {
  const saved = process.env.GATEWAY_ADMIN_TOKEN;
  try {
    delete process.env.GATEWAY_ADMIN_TOKEN;
    seen = [];
    await run(['--url', url]);
    assert.equal(seen[0]?.authorization, undefined);
    process.env.GATEWAY_ADMIN_TOKEN = 'from-env';
    seen = [];
    await run(['--url', url]);
    assert.equal(seen[0]?.authorization, 'Bearer from-env');
    seen = [];
    await run(['--url', url, '--token', 'from-flag']);
    assert.equal(seen[0]?.authorization, 'Bearer from-flag');
  } finally {
    if (saved === undefined) delete process.env.GATEWAY_ADMIN_TOKEN;
    else process.env.GATEWAY_ADMIN_TOKEN = saved;
  }
});

test('HTTP errors and non-reports exit 1 with a readable reason', async () => {
  answer = { status: 401, body: '{"detail":"missing bearer token"}' };
  let r = await run(['--url', url]);
  assert.equal(r.code, 1);
  assert.match(r.err, /HTTP 401 \(pass --token or set GATEWAY_ADMIN_TOKEN\)/);
  answer = { status: 200, body: '{"hello": 1}' };
  r = await run(['--url', url]);
  assert.equal(r.code, 1);
  assert.match(r.err, /did not answer an experiments report/);
  answer = { status: 200, body: 'not json' };
  r = await run(['--url', url]);
  assert.equal(r.code, 1);
  assert.match(r.err, /cannot read/);
  r = await run(['--url', 'http://127.0.0.1:1']);
  assert.equal(r.code, 1);
  assert.match(r.err, /cannot read http:\/\/127\.0\.0\.1:1\/gateway\/experiments/);
});

test('usage errors exit 2; --help exits 0', async () => {
  // Without --url the report reads the default admin listener (config/gateway.yaml's admin.listen).
  const dflt = await run([]);
  assert.notEqual(dflt.code, 2, dflt.err);
  if (dflt.code !== 0) assert.ok(dflt.err.includes('http://127.0.0.1:9901/gateway/experiments'), dflt.err);
  for (const argv of [['--url', 'nope'], ['--url', 'ftp://x'], ['--url', url, '--timeout', '0'], ['--bogus']]) {
    const r = await run(argv);
    assert.equal(r.code, 2, argv.join(' '));
    assert.match(r.err, /usage: magma-gateway report/);
  }
  const h = await run(['--help']);
  assert.equal(h.code, 0);
  assert.match(h.out, /--url/);
});
