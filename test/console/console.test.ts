/**
 * The console in a real browser (docs/console.md): the CLI started from a config file with two loopback agents in
 * a 50/50 split, an A/B episode with env feedback, then each page opened in headless Chromium and checked for
 * what a person would see, against what the admin API answers at that moment: the token prompt, the backends'
 * states, the arms and their trajectories, a drawn chart, the recent batches, an arm going down.
 *
 * Screenshots of each page go to $CONSOLE_SCREENSHOTS when set (`CONSOLE_SCREENSHOTS=docs/images` refreshes the
 * docs' pictures), else to a temporary folder.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { runCli, type CliRun } from '../helpers/cli-process.js';
import { configFile, http, type ConfigFile } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { gatewayAt, mkInput, postOk, type RemoteGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { launchBrowser } from './browser.js';
import { expectedExperiments } from './report-expect.js';

const TOKEN = 'console-test-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const TRAJECTORIES = 12;
const PICK = { arm_robot: { name: 'pick', arguments: { object: 'cup' } } };
const SHOTS = process.env.CONSOLE_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'magma-gw-console-'));

let a: FakeAgent;
let b: FakeAgent;
let file: ConfigFile;
let cli: CliRun;
/** The gateway the CLI runs. */
let gw: RemoteGateway;
let adminUrl: string;
let browser: Browser;
let page: Page;

async function admin(path: string): Promise<unknown> {
  const res = await http(`${adminUrl}${path}`, { headers: AUTH });
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.json;
}


/** The env's answer to a step: one robot line that succeeded, or one that failed, as BENCH's executors write it. */
function feedback(ok: boolean): string {
  const line = ok ? 'arm_robot: pick succeed with message: cup grasped' : 'arm_robot: pick failed with message: cup slipped';
  return JSON.stringify({ infos: line, previous_tool_call: PICK });
}

/** New trajectories, then two env feedback steps on each (some tool lines fail), as one batch per step. */
async function episode(prefix: string, trajectories = TRAJECTORIES): Promise<void> {
  const ids = Array.from({ length: trajectories }, (_, i) => i);
  let cands = await postOk(gw, `${prefix}-1`, ids.map((i) => mkInput(i)));
  for (const step of [2, 3]) {
    cands = await postOk(
      gw,
      `${prefix}-${step}`,
      // Arm b's robot fails more often than arm a's: the chart then shows a difference away from zero.
      ids.map((i) => {
        const ok = cands[i]!.memory._gateway?.backend === 'b' ? (i + step) % 2 === 0 : (i + step) % 5 !== 0;
        return mkInput(i, { instruction: { type: 'env', content: feedback(ok) }, memory: cands[i]!.memory });
      }),
    );
  }
}

/** Loads the page afresh at `hash` (a goto to the same URL with only its hash changed would not reload it). */
async function open(hash: string): Promise<void> {
  await page.goto('about:blank');
  await page.goto(`${adminUrl}/#/${hash}`);
}

/** Opens `hash` and gives the JSON of `endpoint` the page received for what it shows. */
async function openWith<T>(hash: string, endpoint: string): Promise<T> {
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === endpoint && r.status() === 200);
  await open(hash);
  return (await (await answered).json()) as T; // the endpoint's documented shape
}

/** An episode on the lab agent's split where arm a's robot mostly succeeds and arm b's mostly fails. */
async function labEpisode(trajectories: number): Promise<void> {
  const post = async (id: string, inputs: object[]) => {
    const res = await http(`${gw.url}/agents/lab/v1/responses`, { method: 'POST', body: { request_id: id, inputs } });
    assert.equal(res.status, 200, res.text);
    return res.json as { memory: { _gateway?: { backend?: string } } }[];
  };
  const ids = Array.from({ length: trajectories }, (_, i) => i);
  let cands = await post('lab-1', ids.map((i) => mkInput(i)));
  for (const step of [2, 3]) {
    // Mostly successes on a, mostly failures on b, with some of each (an interval needs variation).
    const ok = (i: number) => (cands[i]!.memory._gateway?.backend === 'a' ? (i + step) % 7 !== 0 : (i + step) % 6 === 0);
    cands = await post(`lab-${step}`, ids.map((i) => mkInput(i, { instruction: { type: 'env', content: feedback(ok(i)) }, memory: cands[i]!.memory })));
  }
}

/** The chart's canvas pixels on the row where 0 is drawn, dark ones counted (the zero line). */
async function zeroLinePixels(chart: ReturnType<Page['locator']>): Promise<number> {
  const zero = Number(await chart.getAttribute('data-zero-px'));
  return chart.locator('canvas').evaluate((c, y) => {
    const canvas = c as HTMLCanvasElement;
    const px = canvas.getContext('2d')!.getImageData(0, y, canvas.width, 1).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i + 3]! > 200 && px[i]! < 80 && px[i + 1]! < 80 && px[i + 2]! < 90) n++;
    return n;
  }, zero);
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `console-${name}.png`), fullPage: true });
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await launchBrowser(); // first: without chromium the test fails at once, saying so
  a = await startFakeAgent({ name: 'a', behaviour: { delayMs: 5 } });
  b = await startFakeAgent({ name: 'b', behaviour: { delayMs: 25 } });
  file = configFile({
    server: { host: '127.0.0.1', port: 0 },
    admin: { listen: '127.0.0.1:0', token: TOKEN, pulse_interval_s: 1 },
    log_level: 'info',
    probe_interval_s: 0.5,
    experiments: { snapshot_interval_s: 0.5 },
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [{ name: 'ab', split: { a: 50, b: 50 } }],
    // A second experiment whose arms clearly differ (a's robot mostly succeeds, b's mostly fails).
    agents: { lab: { routes: [{ name: 'xy', split: { a: 50, b: 50 } }] } },
  });
  cli = runCli(['--config', file.path]);
  const summary = await cli.logLine((l) => String(l.msg).startsWith('magma-gateway ') && 'listen' in l);
  gw = gatewayAt((summary.listen as string[])[0]!);
  adminUrl = String((await cli.logLine((l) => String(l.msg).startsWith('admin listener'))).url);
  await episode('ep');
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
});

after(async () => {
  await browser?.close();
  cli?.child.kill('SIGTERM');
  await cli?.exit;
  await Promise.all([a?.close(), b?.close()]);
  file?.remove();
});

test('the page and its assets load without the token; every data endpoint refuses without it', async () => {
  const pageRes = await http(`${adminUrl}/`);
  assert.equal(pageRes.status, 200);
  assert.match(pageRes.headers.get('content-type') ?? '', /text\/html/);
  for (const asset of ['/app.js', '/style.css']) assert.equal((await http(`${adminUrl}${asset}`)).status, 200, asset);
  for (const path of ['/gateway/overview', '/gateway/batches', '/gateway/experiments', '/gateway/experiments/history', '/gateway/backends']) {
    assert.equal((await http(`${adminUrl}${path}`)).status, 401, path);
  }
});

test('the console weighs less than 400 KB and loads nothing from elsewhere', async () => {
  const dir = join(process.cwd(), 'dist/console');
  const bytes = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  assert.ok(bytes < 400 * 1024, `dist/console is ${bytes} bytes`);
  const elsewhere: string[] = [];
  const p = await browser.newPage();
  p.on('request', (r) => {
    if (!r.url().startsWith(adminUrl)) elsewhere.push(r.url());
  });
  await p.goto(`${adminUrl}/`);
  await p.waitForSelector('#token');
  await p.close();
  assert.deepEqual(elsewhere, []);
});

test('with admin.token the page asks for it, shows no data without it, and keeps it for the tab only', async () => {
  await open('overview');
  await page.waitForSelector('#token');
  assert.equal(await page.locator('[data-stat]').count(), 0, 'no data before the token');
  await page.fill('#token', 'not-the-token');
  await page.click('button[type=submit]');
  await page.getByText('That token was refused.').waitFor();
  assert.equal(await page.locator('[data-stat]').count(), 0);
  await page.fill('#token', TOKEN);
  await page.click('button[type=submit]');
  await page.locator('[data-stat="Version"]').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('magma-gateway.admin-token')), TOKEN);
  assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing kept beyond the tab');
  assert.ok(!page.url().includes(TOKEN), 'no token in the URL');
});

test('Overview shows the version, the store and the batches as /gateway/overview counts them', async () => {
  const o = (await admin('/gateway/overview')) as { version: string; store: { kind: string }; listeners: { agent: string }; config: { path: string } };
  await open('overview');
  await page.locator('[data-stat="Version"] .value').getByText(o.version, { exact: true }).waitFor();
  assert.equal(await page.locator('[data-stat="Agent listener"] .value').textContent(), o.listeners.agent);
  assert.match((await page.locator('[data-stat="store"] .value').textContent()) ?? '', new RegExp(`^${o.store.kind}\\s*up$`));
  assert.equal(await page.locator('[data-stat="config"] .value').textContent(), file.path);
  assert.match((await page.locator('[data-stat="overhead"] .sub').textContent()) ?? '', /^\d+ batches since start$/);
  // The pulse draws once it has a few samples (one a second here).
  await waitFor('three pulse points', async () => ((await admin('/gateway/pulse')) as { points: unknown[] }).points.length >= 3, { timeoutMs: 15_000 });
  await open('overview');
  await waitFor('the batches chart drawn', async () => Number(await page.locator('[data-chart="batches"]').getAttribute('data-points')) >= 3, { timeoutMs: 10_000 });
  await shot('overview');
});

test('Backends shows every replica in the state /gateway/backends gives it', async () => {
  const { backends } = (await admin('/gateway/backends')) as { backends: { name: string; replicas: { id: string; state: string }[] }[] };
  await open('backends');
  await page.locator('[data-backend]').first().waitFor();
  for (const bk of backends) {
    for (const r of bk.replicas) {
      assert.equal(await page.locator(`[data-replica="${r.id}"] [data-state]`).getAttribute('data-state'), r.state, r.id);
    }
  }
  assert.equal(await page.locator('[data-route="ab"] [data-ready]').getAttribute('data-ready'), 'true');
  await shot('backends');
});

test('Experiments shows the arms and trajectories of /gateway/experiments, and a chart of the difference over time', async () => {
  const expected = expectedExperiments(await admin('/gateway/experiments'));
  const ab = expected.find((e) => e.key === 'default/ab');
  assert.ok(ab !== undefined, 'the report has the ab split');
  assert.equal(ab.arms.reduce((n, x) => n + x.trajectories, 0), TRAJECTORIES, 'every trajectory counted once');
  // Two snapshots at least (one every 0.5 s), so the chart has a line.
  await waitFor('two history points', async () => ((await admin('/gateway/experiments/history')) as { points: unknown[] }).points.length >= 2, { timeoutMs: 15_000 });
  await open('experiments');
  const card = page.locator('[data-experiment="default/ab"]');
  await card.locator('tr[data-arm]').first().waitFor();
  const shown = await card.locator('table.arms tr[data-arm]').evaluateAll((rows) =>
    rows.map((r) => ({ arm: r.getAttribute('data-arm'), trajectories: Number(r.querySelector('[data-trajectories]')?.textContent) })),
  );
  assert.deepEqual(shown, ab.arms);
  await card.locator('.uplot canvas').waitFor();
  await waitFor('the chart holds two points', async () => Number(await card.locator('.chart').getAttribute('data-points')) >= 2, { timeoutMs: 10_000 });
  // The zero line is drawn, and the y range stays within what a difference of rates can be (±100 pp).
  const chart = card.locator('[data-chart="difference"]');
  assert.ok(Number(await chart.getAttribute('data-y-min')) >= -100 && Number(await chart.getAttribute('data-y-max')) <= 100);
  assert.ok(Number(await chart.getAttribute('data-y-min')) <= 0 && Number(await chart.getAttribute('data-y-max')) >= 0, '0 is in range');
  assert.ok((await zeroLinePixels(chart)) > 300, 'a dark line across the plot at 0');
  // The legend shows the latest values without a hover (uPlot shows `--` until hovered otherwise).
  assert.match((await chart.locator('.u-legend .u-series').nth(1).locator('.u-value').textContent()) ?? '', /^\+?-?\d+\.\d pp$/);
  const inked = await card.locator('.uplot canvas').evaluate((c) => {
    const canvas = c as HTMLCanvasElement;
    const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) n++;
    return n;
  });
  assert.ok(inked > 200, `the chart drew ${inked} pixels`);
  // The export is fetched with the token (a plain link could not send it), never with it in the URL.
  const asked = page.waitForRequest((r) => r.url().includes('/gateway/experiments/trajectories'));
  await card.locator('[data-download="trajectories"]').click();
  const req = await asked;
  assert.equal(req.headers().authorization, `Bearer ${TOKEN}`);
  assert.ok(!req.url().includes(TOKEN));
  await page.reload(); // the picture without the download's answer beside the link
  await card.locator('.uplot canvas').waitFor();
  await shot('experiments');
  // 6 trajectories per arm: still in its burn-in, the verdict says so and how far it is.
  const verdict = card.locator('[data-verdict]');
  await verdict.waitFor({ timeout: 5000 });
  assert.equal(await verdict.getAttribute('data-verdict'), 'collecting');
  assert.match((await verdict.locator('[data-progress]').getAttribute('data-progress')) ?? '', /^\d+\/\d+$/);
});

test('Recent batches lists the last batches as /gateway/batches does, newest first', async () => {
  const { batches } = (await admin('/gateway/batches')) as { batches: { request_id: string; inputs: number }[] };
  assert.deepEqual(batches.slice(0, 3).map((x) => x.request_id), ['ep-3', 'ep-2', 'ep-1']);
  await open('batches');
  await page.locator('tr[data-batch]').first().waitFor();
  const rows = await page.locator('tr[data-batch]').evaluateAll((trs) => trs.map((t) => t.getAttribute('data-batch')));
  assert.deepEqual(rows, batches.map((x) => x.request_id));
  await page.locator('tr[data-batch="ep-3"]').click(); // the picture with one batch opened to its inputs
  await page.locator('table.inputs tr[data-input]').first().waitFor();
  await shot('batches');
});

test('each figure the console shows is the endpoint\'s own value: Overview\'s against /gateway/overview, a comparison against the report', async () => {
  const o = await openWith<{ batches: { per_second: number; in_flight: number }; overhead_ms: { samples: number; p50: number | null; p99: number | null }; uptime_s: number }>('overview', '/gateway/overview');
  await page.locator('[data-stat="rate"] .value').waitFor();
  assert.equal(await page.locator('[data-stat="rate"] .value').textContent(), o.batches.per_second.toFixed(2));
  assert.equal(await page.locator('[data-stat="in-flight"] .value').textContent(), String(o.batches.in_flight));
  assert.equal(await page.locator('[data-stat="overhead"] .sub').textContent(), `${o.overhead_ms.samples} batches since start`);
  const ms = (x: number | null) => (x === null ? '–' : x < 1 ? `${x.toFixed(3)} ms` : x < 10 ? `${x.toFixed(2)} ms` : `${Math.round(x)} ms`);
  assert.equal(await page.locator('[data-stat="overhead"] .value').textContent(), `${ms(o.overhead_ms.p50)} / ${ms(o.overhead_ms.p99)}`);
  const report = await openWith<{ experiments: { agent: string; route: string; comparisons: { arm: string; control: string; fixed: { difference: number } | null }[] }[] }>('experiments', '/gateway/experiments');
  const ab = report.experiments.find((e) => e.route === 'ab')!;
  const c = ab.comparisons[0]!;
  const cell = page.locator(`[data-experiment="default/ab"] tr[data-comparison="${c.arm}-${c.control}"] td`).nth(2);
  await cell.waitFor();
  const d = c.fixed!.difference * 100;
  assert.equal(await cell.textContent(), `${d > 0 ? '+' : d < 0 ? '−' : ''}${Math.abs(d).toFixed(1)} pp`);
});

test('an experiment whose arms differ names the better arm and says you may stop', async () => {
  await labEpisode(60);
  let seen: unknown;
  await waitFor('the lab experiment\'s verdict', async () => {
    const r = (await admin('/gateway/experiments')) as { experiments: { agent: string; verdict?: { state: string } }[] };
    seen = r.experiments.find((e) => e.agent === 'lab')?.verdict;
    return r.experiments.find((e) => e.agent === 'lab')?.verdict?.state === 'arms_differ';
  }, { timeoutMs: 15_000 }).catch((err: unknown) => {
    throw new Error(`${String(err)}: ${JSON.stringify(seen)}`);
  });
  await open('experiments');
  const verdict = page.locator('[data-experiment="lab/xy"] [data-verdict]');
  await verdict.waitFor({ timeout: 5000 });
  assert.equal(await verdict.getAttribute('data-verdict'), 'arms_differ');
  assert.equal(await verdict.getAttribute('data-arm'), 'a');
  assert.match((await verdict.locator('.headline').textContent()) ?? '', /^a is better: you may stop$/);
  assert.equal(await page.locator('[data-experiment="lab/xy"] [data-primary].ok').count(), 1, 'a trustworthy comparison keeps its badge');
});

test('an arm going down: Backends shows it not ready, and Experiments shows the SRM banner when the report flags it', async () => {
  await b.close();
  await waitFor('b not ready', async () => {
    const { backends } = (await admin('/gateway/backends')) as { backends: { name: string; ready: boolean }[] };
    return backends.find((x) => x.name === 'b')?.ready === false;
  }, { timeoutMs: 15_000 });
  // Enough new trajectories, all rerouted to a, for the split's sample-ratio check to flag it (p < 0.001).
  await episode('down', 40);
  await open('backends');
  await page.locator('[data-backend="b"] [data-state]').first().waitFor();
  assert.notEqual(await page.locator('[data-backend="b"] [data-state]').first().getAttribute('data-state'), 'ready');
  const ab = expectedExperiments(await admin('/gateway/experiments')).find((e) => e.key === 'default/ab')!;
  await open('experiments');
  await page.locator('[data-experiment="default/ab"] tr[data-arm]').first().waitFor();
  assert.equal(ab.srmFlagged, true, 'every trajectory since b went down was rerouted to a: the report flags it');
  // What a person sees: the banner, with the cause the report gives.
  const banner = page.locator('[data-experiment="default/ab"] [data-srm="flagged"]');
  await banner.waitFor();
  const text = (await banner.textContent()) ?? '';
  assert.match(text, /rerouted from b/);
  assert.equal(text.split('rerouted from b').length, 2, `the cause once: ${text}`);
  assert.equal(text.match(/not trustworthy/gi)?.length, 1, `said once: ${text}`);
  assert.equal(await page.locator('[data-experiment="default/ab"] [role="alert"]').count(), 1, 'one banner');
  // Not trustworthy: no green primary badge, the comparison marked, the verdict saying so.
  const card = page.locator('[data-experiment="default/ab"]');
  assert.equal(await card.locator('[data-primary].ok').count(), 0, 'no green primary badge');
  assert.ok((await card.locator('[data-untrustworthy]').count()) > 0);
  assert.equal(await card.locator('[data-verdict]').getAttribute('data-verdict'), 'not_trustworthy');
  assert.match((await card.locator('[data-verdict] .headline').textContent()) ?? '', /Not trustworthy/);
});

test('after a reset, the earlier experiment keeps its result and opens like the current one', async () => {
  const before = (await admin('/gateway/experiments')) as { experiments: { route: string; experiment: { id: string }; comparisons: { fixed: { difference: number } | null }[] }[] };
  const old = before.experiments.find((e) => e.route === 'ab')!;
  const res = await http(`${adminUrl}/gateway/experiments/reset`, { method: 'POST', headers: AUTH, body: { route: 'ab' } });
  assert.equal(res.status, 200, res.text);
  const finals = (await admin('/gateway/experiments/earlier')) as { experiments: { experiment: { id: string }; comparisons: { fixed: { difference: number } | null }[] }[] };
  const final = finals.experiments.find((e) => e.experiment.id === old.experiment.id);
  assert.ok(final !== undefined, 'the ended experiment\'s report is kept');
  assert.deepEqual(final.comparisons.map((c) => c.fixed?.difference), old.comparisons.map((c) => c.fixed?.difference));
  await open('experiments');
  const row = page.locator(`tr[data-earlier="${old.experiment.id}"]`);
  await row.waitFor();
  await row.locator('[data-open-earlier]').click();
  const card = page.locator(`.card [data-experiment="default/ab"]`).filter({ hasText: old.experiment.id });
  await card.locator('tr[data-comparison]').first().waitFor();
  const d = old.comparisons[0]!.fixed!.difference * 100;
  assert.equal(await card.locator('tr[data-comparison] td').nth(2).textContent(), `${d > 0 ? '+' : d < 0 ? '−' : ''}${Math.abs(d).toFixed(1)} pp`);
  assert.match((await card.locator('h3').first().textContent()) ?? '', /ended/);
});

after(() => {
  if (process.env.CONSOLE_SCREENSHOTS === undefined) rmSync(SHOTS, { recursive: true, force: true });
});
