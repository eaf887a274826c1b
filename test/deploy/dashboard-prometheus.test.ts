/**
 * The Grafana dashboard against a real Prometheus: a gateway with two loopback agents takes a short demo-like
 * load (an A/B split, an ensemble step, a fallback, error candidates), a `prometheus` process scrapes its
 * /metrics every second, and every panel query of config/grafana/dashboards/magma-gateway.json must return at
 * least one series, including the panels of events that did not happen: they show 0, not "no data", because
 * the gateway exports every series whose labels the config fixes at 0 from the start. No query relies on
 * `or vector(0)`. Prometheus runs the shipped config/prometheus.yml, its targets pointed at the test's gateway.
 * Also: queries use only labels their metrics have, and a fast batch lands in a latency bucket of at most 5 ms.
 *
 * `prometheus` must be installed (Debian: `apt-get install -y prometheus`; .ci/run installs it when missing).
 * Without it this test fails, naming what is missing: the dashboard is never taken as checked when it was not.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { z } from 'zod';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, startGateway, type Cand, type TestGateway, postOk } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../state/helpers.js';
import { dashboard, expressions, must, readData } from './stack-files.js';

const shipped = readData('config/prometheus.yml', z.looseObject({
  global: z.looseObject({}),
  scrape_configs: z.array(z.looseObject({ job_name: z.string(), static_configs: z.array(z.looseObject({ targets: z.array(z.string()) })) })).length(1),
}));
/** The job name config/prometheus.yml gives the gateway: the process panels select on it. */
const JOB = must(shipped.scrape_configs[0], 'the gateway scrape job').job_name;
/** Bounds of every wait on Prometheus (start, first scrapes); each poll is one short HTTP call. */
const PROMETHEUS_WAIT_MS = 60_000;

interface PromAnswer {
  status: string;
  error?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; value?: [number, string] }[] };
}

/** Grafana's built-in and dashboard variables replaced the way Grafana would with "All" selected. */
function substituteVariables(expr: string): string {
  return expr
    .replace(/\$__rate_interval|\$\{__rate_interval\}|\$__interval|\$\{__interval\}|\$__range|\$\{__range\}/g, '1m')
    .replace(/\$\{[A-Za-z_][A-Za-z0-9_]*(?::[a-z]+)?\}|\$[A-Za-z_][A-Za-z0-9_]*/g, '.*');
}

/**
 * Matchers and groupings on labels a metric lacks, which Prometheus answers with series all the same
 * (`{arm=~".*"}`, `by (arm)`), so the query results cannot show them. `labels`: each series name's label names.
 */
function labelProblems(expr: string, labels: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""'); // label values never look like label names
  const used = [...new Set(text.match(/magma_gateway_[a-z0-9_]+/g))].filter((name) => labels.has(name));
  const problems: string[] = [];
  for (const [, name = '', matchers = ''] of text.matchAll(/(magma_gateway_[a-z0-9_]+)\s*\{([^}]*)\}/g)) {
    for (const [, label = ''] of matchers.matchAll(/([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)/g)) {
      if (labels.get(name)?.has(label) === false) problems.push(`${name} has no label "${label}"`);
    }
  }
  for (const [, list = ''] of text.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)) {
    for (const label of list.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
      for (const name of used) if (labels.get(name)?.has(label) === false) problems.push(`grouping by "${label}": ${name} has no such label`);
    }
  }
  return problems;
}

describe('the dashboard against a real Prometheus', () => {
  const cleanup: (() => Promise<void>)[] = [];
  let gw: TestGateway;
  let prom: ChildProcess | undefined;
  let promUrl = '';
  let promLog = '';
  /** Batches whose whole round trip, seen by this client, took at most 5 ms (the gateway's own figure is less). */
  let fastBatches = 0;

  async function query(q: string): Promise<PromAnswer> {
    const res = await fetch(`${promUrl}/api/v1/query?${new URLSearchParams({ query: q })}`);
    return (await res.json()) as PromAnswer;
  }

  /** Waits for a condition on Prometheus, failing at once if it exited; a failed query is "not yet". */
  function waitOnProm(what: string, check: () => Promise<boolean>): Promise<void> {
    return waitFor(
      what,
      async () => {
        if (prom?.exitCode !== null && prom?.exitCode !== undefined) assert.fail(`prometheus exited (${prom.exitCode}):\n${promLog}`);
        return check().catch(() => false);
      },
      { timeoutMs: PROMETHEUS_WAIT_MS, everyMs: 200, detail: () => `prometheus said:\n${promLog}` },
    );
  }

  before(async () => {
    const version = spawnSync('prometheus', ['--version'], { encoding: 'utf8' });
    if (version.error !== undefined || version.status !== 0) {
      assert.fail(
        'prometheus is not installed (or does not run): this test checks the dashboard against a real Prometheus. ' +
          'Install it with `apt-get install -y prometheus` (.ci/run does so when it is missing).',
      );
    }

    const [talker, actor]: FakeAgent[] = await Promise.all([startFakeAgent({ name: 'talker' }), startFakeAgent({ name: 'actor' })]);
    cleanup.push(async () => {
      await Promise.all([talker!.close(), actor!.close()]);
    });
    gw = await startGateway(
      {
        backends: { talker: { url: talker!.url }, actor: { url: actor!.url } },
        routes: [
          { name: 'ensemble', match: { 'extra_keys.ensemble': true }, ensemble: { talker: 1, actor: 1 }, sticky: false, fallback: ['talker', 'actor'] },
          { name: 'ab', split: { talker: 50, actor: 50 }, fallback: ['talker', 'actor'], shadow: ['actor'] },
        ],
      },
      { defaultMetrics: true },
    );
    cleanup.push(() => gw.close());

    // The demo-like load: a 3-step episode of 4 trajectories (BENCH-like), an ensemble step (GEN-like).
    // Timed by the client: a batch it saw answered within 5 ms the gateway answered within 5 ms too.
    const post = async (id: string, inputs: object[]): Promise<Cand[]> => {
      const t0 = performance.now();
      const cands = await postOk(gw, id, inputs);
      if (performance.now() - t0 <= 5) fastBatches++;
      return cands;
    };
    let cands = await post('step-0', [1, 2, 3, 4].map((i) => mkInput(i)));
    for (const step of [1, 2]) {
      cands = await post(
        `step-${step}`,
        cands.map((c) =>
          mkInput(c.source_id, {
            memory: c.memory,
            instruction: { type: 'env', content: JSON.stringify({ infos: ['robot_1: pick succeed with message: ok'] }) },
          }),
        ),
      );
    }
    await post('ensemble', [mkInput(9, { num_outputs: 4, extra_keys: { ensemble: true } })]);
    // A fallback: talker fails, its share of an ensemble step moves to actor.
    talker!.setBehaviour({ status: 500 });
    const moved = await post('fallback', [mkInput(100, { num_outputs: 2, extra_keys: { ensemble: true } })]);
    assert.ok(moved.every((c) => c.status === 'completed' && c.memory._gateway?.backend === 'actor'), 'talker\'s candidate fell back to actor');
    // Errors: both agents fail, the candidates are errors in their slots.
    actor!.setBehaviour({ status: 503 });
    const failed = await post('errors', [mkInput(200)]);
    assert.equal(failed[0]!.status, 'error');
    talker!.setBehaviour({});
    actor!.setBehaviour({});
    // Small batches, for the 5 ms bucket.
    for (let i = 0; i < 5; i++) await post(`small-${i}`, [mkInput(300 + i)]);

    const dir = mkdtempSync(join(tmpdir(), 'magma-gw-prometheus-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    const gatewayTarget = new URL(gw.url).host;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        ...shipped,
        global: { ...shipped.global, scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        scrape_configs: shipped.scrape_configs.map((job) => ({ ...job, static_configs: job.static_configs.map((sc) => ({ ...sc, targets: [gatewayTarget] })) })),
      }),
    );
    prom = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const child = prom;
    child.stdout?.on('data', (d: Buffer) => (promLog += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (promLog += d.toString()));
    cleanup.push(async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    });

    await waitOnProm('Prometheus to answer', async () => (await fetch(`${promUrl}/-/ready`)).ok);
    // Two scrapes at least: rate() and increase() need two samples in their range.
    await waitOnProm('two successful scrapes of the gateway', async () => {
      const a = await query(`sum_over_time(up{job="${JOB}"}[1m])`);
      return Number(a.data?.result[0]?.value?.[1] ?? 0) >= 2;
    });
  });

  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });

  it('every panel query returns at least one series after a demo-like load', async () => {
    assert.ok(expressions.length >= 33, `${expressions.length} queries`);
    const empty: string[] = [];
    for (const { where, expr } of expressions) {
      assert.ok(!/or\s+vector\(/.test(expr), `${where}: no query needs "or vector(0)"; the series exist at 0`);
      const q = substituteVariables(expr);
      const a = await query(q);
      assert.equal(a.status, 'success', `${where}: ${q}: ${a.error ?? ''}`);
      if ((a.data?.result.length ?? 0) === 0) empty.push(`${where}: ${q}`);
    }
    assert.deepEqual(empty, [], 'queries without a series');
  });

  it('every dashboard variable has values', async () => {
    const variables = dashboard.templating.list;
    assert.ok(variables.length > 0);
    for (const v of variables) {
      const q = v.query;
      const m = /^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$/.exec(q);
      assert.ok(m, `variable ${v.name}: ${q}`);
      const res = await fetch(`${promUrl}/api/v1/label/${m[2]}/values?${new URLSearchParams({ 'match[]': m[1]! })}`);
      const values = ((await res.json()) as { data: string[] }).data;
      assert.ok(values.length > 0, `variable ${v.name} has no values`);
    }
  });

  /** Each magma_gateway_* series name Prometheus holds, with its label names (job and instance included). */
  async function seriesLabels(): Promise<Map<string, Set<string>>> {
    const res = await fetch(`${promUrl}/api/v1/series?${new URLSearchParams({ 'match[]': '{__name__=~"magma_gateway_.+"}' })}`);
    const out = new Map<string, Set<string>>();
    for (const { __name__: name, ...rest } of ((await res.json()) as { data: Record<string, string>[] }).data) {
      if (name !== undefined) out.set(name, new Set([...(out.get(name) ?? []), ...Object.keys(rest)]));
    }
    return out;
  }

  it('matchers and groupings use labels their metrics have', async () => {
    const labels = await seriesLabels();
    const problems = expressions.flatMap(({ where, expr }) => labelProblems(expr, labels).map((p) => `${where}: ${p}`));
    assert.deepEqual(problems, []);
  });

  it('the label check flags a label the metric lacks (so the test above can fail)', async () => {
    const labels = await seriesLabels();
    assert.deepEqual(labelProblems('magma_gateway_backend_up{arm=~".*"}', labels), ['magma_gateway_backend_up has no label "arm"']);
    assert.deepEqual(labelProblems('sum by (code) (rate(magma_gateway_fallbacks_total[1m]))', labels), ['grouping by "code": magma_gateway_fallbacks_total has no such label']);
    const good = 'histogram_quantile(0.99, sum by (backend, le) (rate(magma_gateway_backend_request_duration_seconds_bucket{backend=~"$backend", job="x"}[$__rate_interval])))';
    assert.deepEqual(labelProblems(good, labels), []);
  });

  it('events that did not happen read 0, and the ones that did read their count', async () => {
    const value = async (q: string): Promise<number> => {
      const a = await query(q);
      assert.equal(a.data?.result.length, 1, `${q}: ${JSON.stringify(a.data?.result)}`);
      return Number(a.data!.result[0]!.value![1]);
    };
    assert.equal(await value('sum(magma_gateway_backend_ejections_total)'), 0);
    assert.equal(await value('sum(magma_gateway_retry_budget_exhausted_total)'), 0);
    assert.equal(await value('sum(magma_gateway_store_leases_lost_total)'), 0);
    assert.equal(await value('magma_gateway_store_fallback_active'), 0);
    assert.equal(await value('sum(magma_gateway_fallbacks_total{route="ensemble",from="talker",to="actor"})'), 1, 'the fallback');
    // The error batch's input failed on both agents; its code is the last one's (503 or 500).
    assert.equal(await value('sum(magma_gateway_candidate_errors_total{code=~"gateway_backend_not_ready|gateway_backend_http_error"})'), 1);
    assert.equal(await value(`count(magma_gateway_build_info{version=~".+"} == 1)`), 1);
  });

  it('latency buckets start at 1 ms: a fast batch lands in a bucket of at most 5 ms', async () => {
    const buckets = await query('magma_gateway_http_request_duration_seconds_bucket{endpoint="/v1/responses"}');
    const finite = (rs: { metric: Record<string, string> }[] | undefined): number[] =>
      (rs ?? []).filter((r) => r.metric.le !== '+Inf').map((r) => Number(r.metric.le));
    const les = finite(buckets.data?.result).sort((x, y) => x - y);
    assert.equal(les[0], 0.001);
    assert.ok(les.includes(0.005), `buckets ${les.join(', ')}`);
    const backendLes = finite((await query('magma_gateway_backend_request_duration_seconds_bucket')).data?.result);
    assert.equal(Math.min(...backendLes), 0.001);
    // The gateway observes less than the client's round trip, so every batch this client saw finish within
    // 5 ms is counted at or below le="0.005" (the old first bucket, 10 ms, could not show them).
    const a = await query('magma_gateway_http_request_duration_seconds_bucket{endpoint="/v1/responses", le="0.005"}');
    assert.ok(Number(a.data?.result[0]?.value?.[1] ?? -1) >= fastBatches, `${fastBatches} batches took <= 5 ms`);
  });
});
