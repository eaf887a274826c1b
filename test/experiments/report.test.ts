/**
 * `magma-gateway report` against a stub gateway on loopback serving a fixed report: the exact table a person
 * reads, `--json`, the admin bearer token (flag or GATEWAY_ADMIN_TOKEN), and readable failures.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { formatReport, reportCommand } from '../../src/commands/report.js';
import type { CommandIo } from '../../src/commands/args.js';
import type { ArmReport, ExperimentsReport } from '../../src/experiments/report.js';

function arm(name: string, over: Partial<ArmReport>): ArmReport {
  return {
    arm: name,
    member: true,
    trajectories_started: 0,
    steps: 0,
    cached_steps: 0,
    candidates: { completed: 0, error: 0 },
    error_codes: {},
    feedback: { tool_succeeded: 0, tool_failed: 0, env_error: 0, failure_reason: 0, unparsed: 0, other: 0 },
    tool_success: { succeeded: 0, failed: 0, rate: null, ci95: null },
    latency_ms: { samples: 0, p50: null, p95: null },
    ...over,
  };
}

const REPORT: ExperimentsReport = {
  generated_at: '2025-01-01T00:00:00.000Z',
  store: 'redis',
  latency_note: 'approximate',
  agents: [],
  routes: [
    {
      route: 'ab',
      kind: 'split',
      sticky: true,
      members: { qwen: 90, gpt: 10 },
      arms: [
        arm('qwen', {
          trajectories_started: 12, steps: 240, candidates: { completed: 236, error: 4 },
          error_codes: { gateway_backend_timeout: 3, 'bad\u001b[31mcode': 1 },
          feedback: { tool_succeeded: 8, tool_failed: 2, env_error: 1, failure_reason: 2, unparsed: 0, other: 5 },
          tool_success: { succeeded: 8, failed: 2, rate: 0.8, ci95: [0.4902, 0.9433] },
          latency_ms: { samples: 240, p50: 1234.4, p95: 5012.9 },
        }),
        arm('gpt', {
          trajectories_started: 2, steps: 30, candidates: { completed: 30, error: 0 },
          tool_success: { succeeded: 0, failed: 0, rate: null, ci95: null },
          latency_ms: { samples: 30, p50: 8.25, p95: 9.5 },
        }),
        arm('backup', { member: false, steps: 3, candidates: { completed: 3, error: 0 } }),
      ],
      comparison: {
        metric: 'tool_success_rate', a: 'qwen', b: 'gpt', difference: null, ci95: null, z: null, p_value: null,
        test: 'two-sided pooled two-proportion z-test',
      },
    },
    {
      route: 'gen',
      kind: 'ensemble',
      sticky: false,
      members: { qwen: 1, gpt: 1 },
      arms: [arm('qwen', {}), arm('gpt', {})],
      comparison: null,
    },
  ],
};

const TABLE = `experiments (store: redis, at 2025-01-01T00:00:00.000Z)

route ab: split qwen 90, gpt 10
ARM                TRAJ  STEPS  DONE  ERR  TOOLS OK/FAIL  TOOL SUCCESS [95% CI]  ENV ERR  FAIL REASON  UNPARSED  P50 MS  P95 MS  TOP ERROR CODES
qwen                 12    240   236    4            8/2   80.0% [49.0%, 94.3%]        1            2         0    1234    5013  gateway_backend_timeout 3, bad?[31mcode 1
gpt                   2     30    30    0            0/0                      -        0            0         0     8.3     9.5  -
backup (fallback)     0      3     3    0            0/0                      -        0            0         0       -       -  -
gpt - qwen tool success rate: n/a (an arm has no tool outcome yet)

route gen: ensemble qwen 1, gpt 1 (not sticky)
ARM   TRAJ  STEPS  DONE  ERR  TOOLS OK/FAIL  TOOL SUCCESS [95% CI]  ENV ERR  FAIL REASON  UNPARSED  P50 MS  P95 MS  TOP ERROR CODES
qwen     0      0     0    0            0/0                      -        0            0         0       -       -  -
gpt      0      0     0    0            0/0                      -        0            0         0       -       -  -

TRAJ = trajectories started; tool success = robot lines that succeeded / (succeeded + failed).
latency: approximate.
`;

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

test('the table: aligned columns, fallback arms flagged, control characters neutralised, n/a comparison', async () => {
  answer = { status: 200, body: JSON.stringify(REPORT) };
  const r = await run(['--url', url]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, TABLE);
  assert.equal(formatReport(REPORT), TABLE);
});

test('a two-arm comparison line: signed points, interval, z and p (p < 0.001 when tiny)', () => {
  const withCmp = structuredClone(REPORT);
  const ab = withCmp.routes[0]!;
  ab.comparison = { ...ab.comparison!, difference: 0.125, ci95: [-0.05, 0.3], z: 1.5, p_value: 0.1336 };
  assert.ok(formatReport(withCmp).includes(
    'gpt - qwen tool success rate: +12.5 pts [95% CI -5.0, +30.0], z = 1.50, p = 0.134 (two-sided pooled two-proportion z-test)',
  ));
  ab.comparison = { ...ab.comparison, p_value: 0.00001, z: -4.4 };
  assert.ok(formatReport(withCmp).includes('z = -4.40, p < 0.001'));
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
