/**
 * The Experiments page on reports of the agreed JSON shape (docs/console.md#experiments): `experiments[]`
 * with a flagged SRM, always-valid intervals, strata and earlier experiments, and one with every optional part
 * null or missing. The page's own gateway serves the page; the browser is handed these reports in place of
 * `/gateway/experiments` (playwright's request routing), so the page's reading of each field is what is tested.
 * No JavaScript error may happen on the way.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { launchBrowser } from './browser.js';

const arm = (name: string, weight: number, trajectories: number, successes: number, lines: number) => ({
  arm: name, weight, member: true, trajectories, steps: trajectories * 4,
  tool_success: { successes, lines, rate: successes / lines, ci95: [successes / lines - 0.1, successes / lines + 0.1] },
  outcomes: { reported: trajectories, successes: Math.floor(trajectories / 2), rate: 0.5, ci95: [0.3, 0.7], coverage: 1, score_mean: null },
  crossover: { trajectories: 0, share: 0, since: null }, candidates: { completed: trajectories * 4, error: 0 }, error_codes: {},
  latency_ms: { samples: trajectories * 4, p50: 120, p95: 300 },
});

const FLAGGED = {
  agent: 'default', path: '/', route: 'ab', kind: 'split',
  experiment: { id: 'exp-1', name: 'prompt-v2', started_at: '2026-12-01T19:00:00.000Z' },
  primary: 'tool_success', control: 'a', unit: 'trajectory', trustworthy: false,
  warnings: ['sample ratio mismatch: arm b got 0 of 30 trajectories where 15 were expected', 'crossover: 2 trajectories changed arm'],
  srm: { observed: { a: 30, b: 0 }, expected: { a: 15, b: 15 }, p_value: 1e-8, sequential_p_value: 0.0001, flagged: true, cause: '30 trajectories rerouted from b: not ready' },
  arms: [arm('a', 50, 30, 80, 120), arm('b', 50, 0, 0, 0)],
  comparisons: [{
    arm: 'b', control: 'a', metric: 'tool_success', primary: true, label: 'process metric: tool success over observed robot lines, not episode success',
    fixed: { difference: 0.1, ci95: [-0.05, 0.25], p_value: 0.2, se: 0.07, alpha: 0.05, method: 'delta method, trajectory as unit' }, fixed_reason: null,
    sequential: { difference: 0.1, ci95: [-0.2, 0.4], p_value: 0.9, alpha: 0.05, method: 'normal-mixture always-valid (mSPRT)', planned_trajectories: 200, rho2: 0.0397 },
    sequential_reason: null,
  }],
  secondary: [],
  strata: { by: 'attributes.scenario', values: [{ value: 'kitchen-1', arms: [arm('a', 50, 20, 50, 80), arm('b', 50, 0, 0, 0)], comparisons: [] }] },
};

/** Every optional part null or left out. */
const SPARSE = {
  agent: 'kitchen', path: '/agents/kitchen/', route: 'ens', kind: 'ensemble',
  experiment: { id: 'exp-2', name: null, started_at: null },
  arms: [{ arm: 'x', trajectories: 3 }, { arm: 'y', trajectories: 4, tool_success: null, latency_ms: null }],
  comparisons: [{ arm: 'y', control: 'x', metric: 'tool_success', fixed: null, fixed_reason: 'needs 2 trajectories with a tool line per arm', sequential: null, sequential_reason: 'needs 20 trajectories per arm' }],
  srm: null, strata: null,
};

/** In its burn-in, with the report's verdict and each arm's progress. */
const COLLECTING = {
  ...FLAGGED, agent: 'lab', path: '/agents/lab/', route: 'xy', experiment: { id: 'exp-3', name: null, started_at: null }, trustworthy: true, warnings: [], srm: null, strata: null,
  verdict: { state: 'collecting', arm: null, text: 'collecting: 14 more trajectories on b, 8 on a before the always-valid interval', progress: { a: { have: 12, need: 20, unit: 'trajectories' }, b: { have: 6, need: 20, unit: 'trajectories' } } },
};

/** Arms that differ. */
const DIFFER = {
  ...COLLECTING, route: 'uv', experiment: { id: 'exp-4', name: null, started_at: null },
  verdict: { state: 'arms_differ', arm: 'b', text: 'b is better than a on tool success (b - a always-valid +20.0 pts [+5.0, +35.0], p < 0.001): you may stop and report this interval', progress: null },
};

const REPORT = {
  generated_at: '2026-12-01T20:00:00.000Z', store: 'redis', experiments: [FLAGGED, SPARSE, COLLECTING, DIFFER],
  earlier: [{ agent: 'default', route: 'ab', experiment: { id: 'exp-0', name: 'prompt-v1', started_at: '2026-12-01T18:00:00.000Z' }, ended_at: '2026-12-01T19:00:00.000Z', arms: [{ arm: 'a', trajectories: 12 }] }],
};

const HISTORY = {
  interval_s: 60, capacity: 1440, store_up: true,
  points: [0, 1, 2, 3].map((k) => ({
    at: new Date(Date.UTC(2026, 11, 1, 19, k)).toISOString(),
    experiments: [{ id: 'exp-1', agent: 'default', route: 'ab', trajectories: { a: 10 * k, b: 0 },
      comparisons: [{ arm: 'b', control: 'a', metric: 'tool_success', difference: 0.1, fixed_ci95: [-0.3 / (k + 1), 0.3 / (k + 1)], sequential_ci95: k < 2 ? null : [-0.5, 0.6] }] }],
  })),
};

let agent: FakeAgent;
let gw: TestGateway;
let browser: Browser;
let page: Page;
const errors: string[] = [];

before(async () => {
  browser = await launchBrowser();
  agent = await startFakeAgent();
  gw = await startGateway({ backends: { a: { url: agent.url } }, routes: [{ name: 'main', backend: 'a' }] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.route('**/gateway/experiments', (r) => r.fulfill({ json: REPORT }));
  await page.route('**/gateway/experiments/history', (r) => r.fulfill({ json: HISTORY }));
  await page.goto(`${gw.adminUrl}/#/experiments`);
  await page.locator('[data-experiment="default/ab"] tr[data-arm]').first().waitFor();
});

after(async () => {
  await browser?.close();
  await gw?.close();
  await agent?.close();
});

test('a flagged SRM shows the banner with the report\'s first warning and its cause', async () => {
  const banner = page.locator('[data-experiment="default/ab"] [data-srm="flagged"]');
  assert.equal(await banner.count(), 1);
  const text = (await banner.textContent()) ?? '';
  // The report's first warning, with its cause, each said once (a report without a verdict).
  assert.ok(text.toLowerCase().includes(FLAGGED.warnings[0]!.replace(/^sample ratio mismatch: /, '')), text);
  assert.equal(text.split(FLAGGED.srm.cause).length, 2, text);
  assert.equal(text.match(/sample ratio mismatch/gi)?.length, 1, text);
  assert.equal(await page.locator('[data-experiment="default/ab"] [data-primary].ok').count(), 0, 'no green primary badge under an SRM');
  assert.equal(await page.locator('[data-experiment="kitchen/ens"] [data-srm]').count(), 0, 'srm null: no banner');
  // The other warnings are shown too, apart from the banner.
  assert.deepEqual(await page.locator('[data-experiment="default/ab"] [data-warning]').allTextContents(), [FLAGGED.warnings[1]]);
});

test('fixed and always-valid intervals, or the reason each is missing', async () => {
  const row = page.locator('[data-experiment="default/ab"] tr[data-comparison="b-a"]');
  const cells = await row.locator('td').allTextContents();
  assert.equal(cells[2], '+10.0 pp');
  assert.match(cells[3]!, /^\[−5\.0 pp, \+25\.0 pp\] p = 0\.2000$/);
  assert.match(cells[4]!, /^\[−20\.0 pp, \+40\.0 pp\] p = 0\.9000$/);
  const sparse = await page.locator('[data-experiment="kitchen/ens"] tr[data-comparison="y-x"] td').allTextContents();
  assert.equal(sparse[3], 'needs 2 trajectories with a tool line per arm');
  assert.equal(sparse[4], 'needs 20 trajectories per arm');
});

test('arms with weights and trajectories, strata, earlier experiments; missing parts shown as dashes', async () => {
  const arms = await page.locator('[data-experiment="default/ab"] table.arms tr[data-arm]').evaluateAll((rows) =>
    rows.map((r) => [...r.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)),
  );
  assert.deepEqual(arms, [['a (control)', '50', '30'], ['b', '50', '0']]);
  assert.ok((await page.locator('[data-stratum="kitchen-1"]').textContent())?.includes('a 20 · b 0'));
  assert.ok((await page.getByText('prompt-v1').count()) > 0, 'the earlier experiment is listed');
  const sparseArms = await page.locator('[data-experiment="kitchen/ens"] table.arms tr[data-arm]').evaluateAll((rows) =>
    rows.map((r) => r.querySelector('[data-trajectories]')?.textContent),
  );
  assert.deepEqual(sparseArms, ['3', '4']);
});

test('a verdict opens the card: the burn-in progress of each arm, the better arm named with "you may stop"', async () => {
  const collecting = page.locator('[data-experiment="lab/xy"] [data-verdict]');
  assert.equal(await collecting.getAttribute('data-verdict'), 'collecting');
  assert.equal(await collecting.locator('[data-progress]').getAttribute('data-progress'), '6/20', 'the least advanced arm first');
  assert.deepEqual(await collecting.locator('.arm-progress').allTextContents(), ['b6 of 20 trajectories', 'a12 of 20 trajectories']);
  assert.equal(await collecting.locator('[data-verdict-text]').textContent(), '14 more trajectories on b, 8 on a before the always-valid interval.'.replace(/^./, (c) => c.toUpperCase()));
  const differ = page.locator('[data-experiment="lab/uv"] [data-verdict]');
  assert.equal(await differ.getAttribute('data-arm'), 'b');
  assert.equal(await differ.locator('.headline').textContent(), 'b is better: you may stop');
  // The verdict is first in its card, right under the title.
  assert.equal(await page.locator('[data-experiment="lab/uv"] > :nth-child(2)').getAttribute('data-verdict'), 'arms_differ');
});

test('no experiment: the page shows a config example and links to the docs page, which is served', async () => {
  const p = await browser.newPage();
  await p.route('**/gateway/experiments', (r) => r.fulfill({ json: { generated_at: null, store: 'memory', experiments: [], earlier: [] } }));
  await p.goto(`${gw.adminUrl}/#/experiments`);
  const empty = p.locator('[data-empty="experiments"]');
  await empty.waitFor();
  assert.match((await empty.locator('pre').textContent()) ?? '', /split: \{ talker: 50, actor: 50 \}/);
  const href = await empty.locator('a').getAttribute('href');
  const doc = await p.request.get(new URL(href!, `${gw.adminUrl}/`).toString());
  assert.equal(doc.status(), 200);
  assert.match(await doc.text(), /^# Experiments/);
  await p.close();
});

test('the chart draws the history of the experiment\'s id, and no script error happened', async () => {
  const chart = page.locator('[data-experiment="default/ab"] .chart');
  await chart.locator('canvas').waitFor();
  assert.equal(await chart.getAttribute('data-points'), '4');
  assert.equal(await page.locator('[data-experiment="kitchen/ens"] [data-chart="empty"]').count(), 1, 'no point of exp-2: no chart');
  assert.deepEqual(errors, []);
});
