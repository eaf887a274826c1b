/**
 * `magma-gateway check` against real agents on loopback: the demo agents and the fake agent must pass every
 * row; each deliberately broken fake agent must fail exactly the rows that describe its fault (no more, so a
 * team reading the table is sent to the right place), with exit code 1; usage errors exit 2.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startActor } from '../../demo/agents/actor.js';
import type { AgentServer } from '../../demo/agents/agent-server.js';
import { parseBody, validateAgentRequest } from '../../demo/agents/protocol.js';
import { startTalker } from '../../demo/agents/talker.js';
import { checkCommand, formatTable, runChecks } from '../../src/commands/check.js';
import type { CommandIo } from '../../src/commands/args.js';
import type { CheckResult } from '../../src/commands/check-http.js';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import type { BehaviourFn, FakeBehaviour } from '../helpers/fake-agent.js';
import { useFixtures } from '../helpers/fixtures.js';

const ORDERING = 'ordering 7x2 3x1';
const BATCH = 'batch 4 inputs 1+3+1+2';
const MEMORY = 'memory round trip';
const INVALID = [
  '422 id 1.0',
  '422 num_outputs 0',
  '422 unknown field',
  '422 instruction.type system',
  '422 missing request_id',
  '422 body not JSON',
];
/** The rows every run reports, in order (the legacy-info note row is added only when it applies). */
const CHECK_NAMES = ['health', 'info strict', ORDERING, BATCH, 'empty inputs', MEMORY, ...INVALID];

function failed(results: CheckResult[]): string[] {
  return results.filter((r) => !r.ok).map((r) => r.name);
}

function row(results: CheckResult[], name: string): CheckResult {
  const r = results.find((x) => x.name === name);
  assert.ok(r, `no row ${name}`);
  return r;
}

function capture(): CommandIo & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => void (out += t), err: (t) => void (err += t), stdout: () => out, stderr: () => err };
}

/** Every agent probed here is closed once the file's tests are done. */
const f = useFixtures();

async function onServer<T>(start: () => Promise<AgentServer>, fn: (url: string) => Promise<T>): Promise<T> {
  const s = await start();
  f.defer(() => s.close());
  return fn(s.url);
}

async function onFake<T>(behaviour: FakeBehaviour | BehaviourFn, fn: (url: string) => Promise<T>): Promise<T> {
  return fn((await f.agent({ name: 'probe', behaviour })).url);
}

/** Run the probe on a broken fake agent; assert exactly `expected` rows fail and the command exits 1. */
async function expectFailures(behaviour: FakeBehaviour | BehaviourFn, expected: string[]): Promise<CheckResult[]> {
  return onFake(behaviour, async (url) => {
    const results = await runChecks(url, { timeoutMs: 5000 });
    assert.deepEqual(failed(results).sort(), [...expected].sort(), formatTable(results));
    const io = capture();
    assert.equal(await checkCommand([url, '--timeout', '5'], io), 1);
    assert.match(io.stdout(), new RegExp(`^${results.length - expected.length} passed, ${expected.length} failed$`, 'm'));
    return results;
  });
}

/** A port nothing listens on: bind, read the port, close. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('check passes conformant agents', () => {
  for (const [label, start] of [
    ['talker demo agent', () => startTalker()],
    ['actor demo agent', () => startActor()],
  ] as const) {
    test(label, () =>
      onServer(start, async (url) => {
        const results = await runChecks(`${url}/`, { timeoutMs: 5000 });
        assert.deepEqual(results.map((r) => r.name), [...CHECK_NAMES]);
        assert.deepEqual(failed(results), [], formatTable(results));
        assert.match(row(results, ORDERING).detail, /^\(7,0\) \(7,1\) \(3,0\)$/);
        const io = capture();
        assert.equal(await checkCommand([url], io), 0);
        assert.match(io.stdout(), new RegExp(`^${CHECK_NAMES.length} passed, 0 failed$`, 'm'));
      }),
    );
  }

  test('fake agent with --json output', () =>
    onFake({}, async (url) => {
      const io = capture();
      assert.equal(await checkCommand(['--json', url, '--timeout', '2.5'], io), 0);
      const doc = JSON.parse(io.stdout()) as { agent: string; passed: number; failed: number; results: CheckResult[] };
      assert.equal(doc.agent, url);
      assert.equal(doc.failed, 0);
      assert.equal(doc.passed, CHECK_NAMES.length);
      assert.ok(doc.results.every((r) => r.ok && typeof r.detail === 'string'));
    }));

  test('error candidates occupy their slots: they pass, noted in the detail', () =>
    onFake({ errorCandidates: true }, async (url) => {
      const results = await runChecks(url);
      assert.deepEqual(failed(results), [], formatTable(results));
      assert.match(row(results, ORDERING).detail, /3 of 3 candidates are error candidates \(model_error\)/);
    }));
});

describe('check fails broken agents on the right rows', () => {
  test('wrong order', async () => {
    const r = await expectFailures({ reverse: true }, [ORDERING, BATCH]);
    assert.match(row(r, ORDERING).detail, /expected 7\/0, found 3\/0/);
  });

  test('missing candidate', async () => {
    const r = await expectFailures({ missing: true }, [ORDERING, BATCH, MEMORY]);
    assert.match(row(r, MEMORY).detail, /asked 2 candidates, got 1/);
  });

  test('accepts invalid bodies with 200', async () => {
    // Valid requests are answered correctly; anything the strict models reject gets 200 [] instead of 422.
    const lax: BehaviourFn = (rec) => {
      const p = parseBody(rec.raw);
      return p.ok && validateAgentRequest(p.value).ok ? {} : { status: 200, statusBody: [] };
    };
    const r = await expectFailures(lax, INVALID);
    assert.equal(INVALID.length, 6);
    assert.match(row(r, '422 id 1.0').detail, /HTTP 200: accepted an invalid body/);
  });

  test('422 without a FastAPI detail body', async () => {
    const noDetail: BehaviourFn = (rec) => (rec.raw.includes('"type":"system"') ? { status: 422, statusBody: 'nope' } : {});
    const r = await expectFailures(noDetail, ['422 instruction.type system']);
    assert.match(row(r, '422 instruction.type system').detail, /HTTP 422 without a JSON "detail"/);
  });

  test('info with an extra field', async () => {
    const r = await expectFailures({ info: { coaching_session_version: '1' } }, [
      'info strict',
      'info no coaching_session_version',
    ]);
    assert.match(row(r, 'info strict').detail, /coaching_session_version/);
  });

  test('info with a wrong protocol version and non-boolean capabilities', async () => {
    const bad = { protocol_version: '1.0', capabilities: { inference: 'true' } };
    const r = await expectFailures({ info: bad }, ['info strict']);
    assert.match(row(r, 'info strict').detail, /capabilities\.inference/);
    await expectFailures({ info: { protocol_version: '1.0' } }, ['info strict']);
    await expectFailures({ info: { capabilities: { inference: false } } }, ['info strict']);
  });

  test('health not exactly {"status":"ready"}', async () => {
    await expectFailures({ health: 503 }, ['health']);
    // The contract's default would fill `{}` in, but BENCH compares the body exactly.
    const { url } = await f.server((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const r = await runChecks(url, { timeoutMs: 2000 });
    assert.match(row(r, 'health').detail, /expected exactly \{"status":"ready"\}, got \{\}/);
  });

  test('loses big integers (a JSON.parse/JSON.stringify agent)', async () => {
    const lossy: FakeBehaviour = { transform: (outs) => JSON.parse(stringifyExact(outs)) as unknown };
    const r = await expectFailures(lossy, [BATCH, MEMORY]);
    assert.match(row(r, BATCH).detail, /99999999999999999999 is not in the raw body verbatim/);
    const mem = row(r, MEMORY).detail;
    assert.match(mem, /memory\.big: sent 12345678901234567890, got 12345678901234567000/);
    assert.match(mem, /memory\.f: sent 1\.0, got 1\b/);
  });

  test('empty inputs answered with candidates or garbage', async () => {
    const notEmpty: FakeBehaviour = { transform: (outs) => (outs.length === 0 ? [{}] : outs) };
    await expectFailures(notEmpty, ['empty inputs']);
    const r = await expectFailures({ garbage: true }, [ORDERING, BATCH, 'empty inputs', MEMORY, ...INVALID]);
    assert.match(row(r, ORDERING).detail, /not JSON/);
  });
});

describe('check never crashes', () => {
  test('unreachable URL: health fails with the reason, the rest are not run, exit 1', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const results = await runChecks(url, { timeoutMs: 2000 });
    assert.equal(results.length, CHECK_NAMES.length);
    assert.match(row(results, 'health').detail, /ECONNREFUSED/);
    assert.ok(results.slice(1).every((r) => !r.ok && r.detail.startsWith('not run: agent unreachable')));
    const io = capture();
    assert.equal(await checkCommand([url], io), 1);
    assert.match(io.stdout(), new RegExp(`0 passed, ${CHECK_NAMES.length} failed`));
  });

  test('a hanging agent fails on the timeout', async () => {
    const r = await onFake({ hang: true }, (url) => runChecks(url, { timeoutMs: 150 }));
    assert.deepEqual(failed(r), CHECK_NAMES.filter((n) => n !== 'health' && n !== 'info strict'));
    assert.match(row(r, ORDERING).detail, /no answer within 150 ms/);
    const slow = await onFake({ probeDelayMs: 2000 }, (url) => runChecks(url, { timeoutMs: 150 }));
    assert.match(row(slow, 'health').detail, /no answer within 150 ms/);
    assert.ok(slow.slice(1).every((x) => x.detail.startsWith('not run')));
  });

  test('usage errors exit 2', async () => {
    const bad = [
      [],
      ['a', 'b'],
      ['http://x', '--timeout', 'abc'],
      ['http://x', '--timeout', '0'],
      ['ftp://x'],
      ['--bogus', 'http://x'],
    ];
    for (const argv of bad) {
      const io = capture();
      assert.equal(await checkCommand(argv, io), 2, argv.join(' '));
      assert.match(io.stderr(), /usage: magma-gateway check/);
    }
    const io = capture();
    assert.equal(await checkCommand(['--help'], io), 0);
    assert.match(io.stdout(), /exit code: 0 all checks pass/);
  });
});

test('formatTable aligns columns and sums up', () => {
  const text = formatTable([
    { name: 'health', ok: true, detail: 'HTTP 200' },
    { name: 'a longer name', ok: false, detail: 'line one\nline two \u001b[31mred' },
  ]);
  assert.equal(
    text,
    [
      'CHECK          RESULT  DETAIL',
      'health         PASS    HTTP 200',
      'a longer name  FAIL    line one line two ?[31mred',
      '',
      '1 passed, 1 failed',
    ].join('\n'),
  );
  assert.equal(formatTable([]).split('\n').at(-1), '0 passed, 0 failed');
});
