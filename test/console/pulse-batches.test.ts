/**
 * The console's time series, cache and batches in a real browser (docs/console.md), from a gateway driven by real
 * loopback agents: Overview and Backends draw the pulse (a sample every second here), the cache's hit rate shows
 * with a cache configured, a streamed batch is listed with a duration above its overhead, and a batch opens to its
 * inputs. Every figure checked is compared with the JSON the page itself received (the endpoint's own value), so
 * the console cannot disagree with the admin API. The page runs under a strict CSP (`default-src 'self'`), and
 * no script error or console error may happen.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, postOk, startGateway, type TestGateway } from '../helpers/gateway.js';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { launchBrowser } from './browser.js';

let a: FakeAgent;
let b: FakeAgent;
let gw: TestGateway;
let browser: Browser;
let page: Page;
const problems: string[] = [];

async function admin<T>(path: string): Promise<T> {
  const res = await http(`${gw.adminUrl}${path}`);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.json as T; // the endpoint's documented shape
}

/** Opens `hash` and gives the JSON of `endpoint` that the page received for what it shows now. */
async function openWith<T>(hash: string, endpoint: string): Promise<T> {
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === endpoint && r.status() === 200);
  await page.goto('about:blank'); // a goto changing only the hash would not load the page afresh
  await page.goto(`${gw.adminUrl}/#/${hash}`);
  return (await (await answered).json()) as T;
}

/** Pixels drawn on a chart's canvas. */
function inked(page: Page, selector: string): Promise<number> {
  return page.locator(`${selector} .uplot canvas`).evaluate((c) => {
    const canvas = c as HTMLCanvasElement;
    const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) n++;
    return n;
  });
}

before(async () => {
  browser = await launchBrowser();
  a = await startFakeAgent({ name: 'a', behaviour: { delayMs: 3 } });
  b = await startFakeAgent({ name: 'b', behaviour: { delayMs: 8 } });
  gw = await startGateway({
    admin: { pulse_interval_s: 1 },
    // Answers over 100 bytes are streamed when the batch can be (one backend route): the virtual agent's are.
    server: { stream_answers_over_mb: 0.0001 },
    cache: { max_mb: 16 },
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [{ name: 'ab', split: { a: 50, b: 50 }, cache: 'always' }],
    agents: { solo: { routes: [{ name: 'direct', backend: 'b' }] } },
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  // The CSP the admin listener may send: nothing inline, nothing from elsewhere.
  await page.route('**/*', async (route) => {
    const res = await route.fetch();
    await route.fulfill({ response: res, headers: { ...res.headers(), 'content-security-policy': "default-src 'self'", 'x-content-type-options': 'nosniff' } });
  });
  const inputs = [0, 1, 2, 3].map((i) => mkInput(i));
  await postOk(gw, 'first', inputs);
  await postOk(gw, 'again', inputs); // the same inputs: answered from the cache
  const streamed = await gw.call('/agents/solo/v1/responses', { method: 'POST', body: { request_id: 'streamed-1', inputs: [mkInput(7), mkInput(8)] } });
  assert.equal(streamed.status, 200, streamed.text);
});

after(async () => {
  await browser?.close();
  await gw?.close();
  await Promise.all([a?.close(), b?.close()]);
});

test('Overview shows the cache hit rate and draws batches/s, errors/s and overhead over time, as /gateway/pulse gives them', async () => {
  await waitFor('two pulse points', async () => (await admin<{ points: unknown[] }>('/gateway/pulse')).points.length >= 2, { timeoutMs: 15_000 });
  const o = await openWith<{ cache: { hit_rate: number; hits: number; misses: number } | null }>('overview', '/gateway/overview');
  const rate = page.locator('[data-stat="cache-hit-rate"] .value');
  await rate.waitFor();
  assert.ok(o.cache !== null && o.cache.hits >= 4, `the second batch's inputs were hits: ${JSON.stringify(o.cache)}`);
  assert.equal(await rate.textContent(), `${(o.cache.hit_rate * 100).toFixed(1)}%`);
  assert.equal(await page.locator('[data-stat="cache-hit-rate"] .sub').textContent(), `${o.cache.hits} hits · ${o.cache.misses} misses since start`);
  for (const name of ['batches', 'errors', 'overhead']) {
    const chart = page.locator(`[data-chart="${name}"]`);
    await chart.locator('canvas').waitFor();
    await waitFor(`${name} holds two points`, async () => Number(await chart.getAttribute('data-points')) >= 2, { timeoutMs: 10_000 });
    assert.ok((await inked(page, `[data-chart="${name}"]`)) > 200, name);
    assert.ok(Number(await chart.getAttribute('data-y-min')) >= 0, `${name}: a rate or a time is never negative`);
  }
});

test('the legend shows the latest point without a hover: the pulse\'s own last value', async () => {
  const pulse = await openWith<{ points: { batches_per_s: number }[] }>('overview', '/gateway/pulse');
  await page.locator('[data-chart="batches"] canvas').waitFor();
  const last = pulse.points.at(-1)!;
  const legend = page.locator('[data-chart="batches"] .u-legend .u-series').nth(1).locator('.u-value');
  assert.equal(Number(await legend.textContent()), last.batches_per_s);
});

test('Backends draws each backend\'s latency and failures over time', async () => {
  await openWith('backends', '/gateway/pulse');
  for (const name of ['a', 'b']) {
    const chart = page.locator(`[data-chart="latency-${name}"]`);
    await chart.locator('canvas').waitFor();
    assert.ok(Number(await chart.getAttribute('data-points')) >= 2, name);
    assert.ok((await inked(page, `[data-chart="latency-${name}"]`)) > 200, name);
    await page.locator(`[data-chart="failures-${name}"] canvas`).waitFor();
  }
});

interface Listed { seq: number; request_id: string; duration_ms: number; overhead_ms: number; cache_hits: number | null; streamed: boolean; backends: Record<string, number> }

test('Recent batches: the cache hits column, a streamed batch with a duration above its overhead, backends in a stable order', async () => {
  const { batches } = await openWith<{ batches: Listed[] }>('batches', '/gateway/batches');
  await page.locator('tr[data-batch]').first().waitFor();
  const again = batches.find((x) => x.request_id === 'again')!;
  assert.equal(again.cache_hits, 4);
  assert.equal(await page.locator('tr[data-batch="again"] [data-cache-hits]').getAttribute('data-cache-hits'), '4');
  assert.match((await page.locator('tr[data-batch="again"]').textContent()) ?? '', /served from cache/);
  const first = batches.find((x) => x.request_id === 'first')!;
  assert.deepEqual(Object.keys(first.backends), [...Object.keys(first.backends)].sort(), 'backends listed by name');
  const streamed = batches.find((x) => x.request_id === 'streamed-1');
  assert.ok(streamed !== undefined, 'the streamed batch is listed');
  assert.equal(streamed.streamed, true);
  assert.ok(streamed.duration_ms > streamed.overhead_ms, `duration ${streamed.duration_ms} ms above overhead ${streamed.overhead_ms} ms`);
  const row = page.locator('tr[data-batch="streamed-1"]');
  assert.equal(Number(await row.locator('[data-duration]').getAttribute('data-duration')), streamed.duration_ms);
  assert.equal(Number(await row.locator('[data-overhead]').getAttribute('data-overhead')), streamed.overhead_ms);
  assert.equal(await row.locator('[data-streamed]').count(), 1);
  for (const x of batches) assert.ok(x.duration_ms > 0 && x.duration_ms >= x.overhead_ms, `${x.request_id}: ${x.duration_ms} ms, overhead ${x.overhead_ms} ms`);
});

test('a batch opens to its inputs: ids, route, arm, backend, status, cache, error code, and no agent data', async () => {
  const { batches } = await openWith<{ batches: Listed[] }>('batches', '/gateway/batches');
  const first = batches.find((x) => x.request_id === 'first')!;
  const detail = await admin<{ input_rows: { id: string; route: string; arm: string; backend: string; status: string; cached: boolean }[] }>(`/gateway/batches/${first.seq}`);
  assert.deepEqual(detail.input_rows.map((r) => r.id), ['0', '1', '2', '3']);
  assert.ok(!JSON.stringify(detail).includes('task for'), 'no instruction, memory or prompt kept');
  await page.locator('tr[data-batch="first"]').click();
  const table = page.locator(`[data-inputs="${first.seq}"]`);
  await table.waitFor();
  const shown = await table.locator('tr[data-input]').evaluateAll((trs) => trs.map((t) => [...t.querySelectorAll('td')].map((td) => td.textContent)));
  assert.deepEqual(
    shown,
    detail.input_rows.map((r) => [r.id, r.route, r.arm, r.backend, '1', r.status, r.cached ? 'served from cache' : '–', '–']),
  );
  assert.ok(detail.input_rows.every((r) => r.status === 'completed' && r.route === 'ab' && r.arm === r.backend));
  const again = batches.find((x) => x.request_id === 'again')!;
  const cached = await admin<{ input_rows: { cached: boolean; backend: string | null }[] }>(`/gateway/batches/${again.seq}`);
  assert.ok(cached.input_rows.every((r) => r.cached && r.backend === null), 'the cache answered them all');
});

test('the favicon is served, and no script error, console error or CSP refusal happened on any page', async () => {
  const icon = await http(`${gw.adminUrl}/favicon.svg`);
  assert.equal(icon.status, 200);
  assert.match(icon.headers.get('content-type') ?? '', /image\/svg\+xml/);
  await openWith('experiments', '/gateway/experiments');
  await page.locator('[data-experiment="default/ab"]').waitFor();
  assert.deepEqual(problems, []);
});
