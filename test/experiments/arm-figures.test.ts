/**
 * Truthful per-arm and per-member figures (docs/experiments.md#what-each-number-means), through a real gateway and
 * loopback agents: a split arm whose backend times out on every other call shows those calls in its latency (p95 at
 * least the timeout) and their share; an ensemble member that fails has its own error candidates, latency and
 * error share, none credited to the member that answered; a backend answering one candidate short is an
 * invalid_response in the backend outcomes, the metric, the log and the Backends data, though its good candidates
 * are kept.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ArmReport } from '../../src/experiments/arm-counts.js';
import type { ExperimentReport, ExperimentsReport } from '../../src/experiments/report/report.js';
import { loggerOptions } from '../../src/logging.js';
import { chooseArm } from '../helpers/split.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, postOk, startGateway, type TestGateway } from '../helpers/gateway.js';

const TIMEOUT_MS = 300;
let agents: Record<'fast' | 'slow' | 'good' | 'bad' | 'short', FakeAgent>;
let gw: TestGateway;
let report: ExperimentsReport;
const lines: string[] = [];

function route(name: string): ExperimentReport {
  const r = report.experiments.find((x) => x.route === name);
  assert.ok(r, `no route ${name}`);
  return r;
}

function arm(r: ExperimentReport, name: string): ArmReport {
  const a = r.arms.find((x) => x.arm === name);
  assert.ok(a, `no arm ${name}`);
  return a;
}

before(async () => {
  const [fast, slow, good, bad, short] = await Promise.all([
    startFakeAgent({ name: 'fast' }),
    // Every other call hangs until the gateway's timeout: never two failures in a row, so slow is never ejected.
    startFakeAgent({ name: 'slow', behaviour: (_req, i) => (i % 2 === 0 ? { hang: true } : {}) }),
    startFakeAgent({ name: 'good' }),
    startFakeAgent({ name: 'bad', behaviour: { status: 500 } }),
    startFakeAgent({ name: 'short', behaviour: { missing: true } }),
  ]);
  agents = { fast: fast!, slow: slow!, good: good!, bad: bad!, short: short! };
  const stream = { write: (l: string): void => void lines.push(l) };
  gw = await startGateway(
    {
      backends: {
        fast: { url: fast!.url }, slow: { url: slow!.url, timeout_s: TIMEOUT_MS / 1000 }, good: { url: good!.url },
        bad: { url: bad!.url, eject_after_failures: 1000 }, short: { url: short!.url },
      },
      routes: [
        { name: 'ab', match: { 'extra_keys.mode': 'ab' }, split: { fast: 1, slow: 1 } },
        { name: 'ens', match: { 'extra_keys.mode': 'ens' }, ensemble: { good: 1, bad: 1 } },
        { name: 'sh', match: { 'extra_keys.mode': 'sh' }, backend: 'short' },
        { name: 'default', backend: 'fast' },
      ],
    },
    { logger: { ...loggerOptions('info'), stream } },
  );
  // Eight batches of one new trajectory each drawn for slow (one sub-request each), and as many for fast.
  const arms = [{ name: 'fast', weight: 1 }, { name: 'slow', weight: 1 }];
  const drawn = { fast: 0, slow: 0 };
  for (let k = 0; drawn.fast + drawn.slow < 16; k++) {
    const rid = `ab${k}`;
    const to = chooseArm(rid, 0, arms) as 'fast' | 'slow';
    if (drawn[to] >= 8) continue;
    drawn[to]++;
    await postOk(gw, rid, [mkInput(0, { extra_keys: { mode: 'ab' } })]);
  }
  // An ensemble of one candidate from each member, four times: bad fails every time.
  for (let k = 0; k < 4; k++) await postOk(gw, `ens${k}`, [mkInput(0, { extra_keys: { mode: 'ens' }, num_outputs: 2 })]);
  await postOk(gw, 'short', [mkInput(0, { extra_keys: { mode: 'sh' }, num_outputs: 3 })]);
  report = (await (await fetch(`${gw.adminUrl}/gateway/experiments`)).json()) as ExperimentsReport;
});

after(async () => {
  await gw?.close();
  await Promise.all(Object.values(agents ?? {}).map((a) => a.close()));
});

test('an arm timing out on every other call: its p95 is at least the timeout, the failed share is shown', () => {
  const slow = arm(route('ab'), 'slow');
  assert.equal(slow.trajectories, 8);
  assert.equal(slow.latency_ms.samples, 8, JSON.stringify(slow.latency_ms));
  assert.equal(slow.latency_ms.failed, 4);
  assert.equal(slow.latency_ms.failed_share, 0.5);
  assert.ok(slow.latency_ms.p95! >= TIMEOUT_MS, JSON.stringify(slow.latency_ms));
  assert.equal(slow.error_codes.gateway_backend_timeout, 4);
  const fast = arm(route('ab'), 'fast');
  assert.deepEqual([fast.latency_ms.samples, fast.latency_ms.failed, fast.latency_ms.failed_share], [8, 0, 0]);
  assert.ok(fast.latency_ms.p95! < TIMEOUT_MS, JSON.stringify(fast.latency_ms));
});

test('an ensemble member\'s errors are its own: error candidates, error share, latency and failed calls', () => {
  const r = route('ens');
  const good = arm(r, 'good');
  const bad = arm(r, 'bad');
  assert.deepEqual([good.candidates, bad.candidates], [{ completed: 4, error: 0 }, { completed: 0, error: 4 }]);
  assert.deepEqual([good.error_candidate_share, good.error_candidate_share_of], [0, 'candidates']);
  assert.deepEqual([bad.error_candidate_share, bad.error_candidate_share_of], [1, 'candidates']);
  assert.deepEqual(Object.keys(good.error_codes), []);
  assert.equal(bad.error_codes.gateway_backend_http_error, 4);
  assert.deepEqual([good.latency_ms.samples, good.latency_ms.failed], [4, 0]);
  assert.deepEqual([bad.latency_ms.samples, bad.latency_ms.failed, bad.latency_ms.failed_share], [4, 4, 1]);
  // A split arm's share stays per trajectory.
  assert.equal(arm(route('ab'), 'slow').error_candidate_share_of, 'trajectories');
});

test('a backend answering one candidate short: invalid_response in outcomes, metric, log and Backends data', async () => {
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(metrics, /magma_gateway_backend_requests_total\{backend="short",outcome="gateway_backend_invalid_response"\} 1/);
  assert.doesNotMatch(metrics, /magma_gateway_backend_requests_total\{backend="short",outcome="ok"\} [1-9]/);
  const backends = (await (await fetch(`${gw.adminUrl}/gateway/backends`)).json()) as { backends: { name: string; outcomes: Record<string, number> }[] };
  assert.deepEqual(backends.backends.find((b) => b.name === 'short')?.outcomes, { gateway_backend_invalid_response: 1 });
  const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.backend === 'short');
  assert.ok(logged.some((l) => l.code === 'gateway_backend_invalid_response' && l.candidates === 1 && /missing/.test(String(l.reason))), JSON.stringify(logged));
  // The two good candidates were kept, the missing one is an error candidate.
  const cands = await postOk(gw, 'short2', [mkInput(0, { extra_keys: { mode: 'sh' }, num_outputs: 3 })]);
  assert.deepEqual(cands.map((c) => c.status), ['completed', 'completed', 'error']);
});
