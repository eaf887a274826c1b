/**
 * What a web page in the operator's browser can make an admin listener without a token do (docs/operations.md#admin-security),
 * in headless Chromium: a page on another origin (a test server on another port of the same host, so same-site to
 * the browser) tries every request a browser sends without asking first, and a name re-pointed at 127.0.0.1 (DNS
 * rebinding, played by Chromium's host resolver rules) tries to read the API as its own origin. Neither gets
 * anything; the console still works from its own origin, with and without a token, under its CSP.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { ExperimentsReport } from '../../src/experiments/report/report.js';
import { startGatewayFromFile, type FileGateway } from '../helpers/config-file.js';
import { startFakeAgent, type FakeAgent } from '../helpers/fake-agent.js';
import { mkInput, postOk } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';
import { chromiumPath } from './browser.js';

const EVIL = 'evil.example';
const TOKEN = 'origin-test-token-0123456789';

let a: FakeAgent;
let b: FakeAgent;
let gw: FileGateway;
let attacker: Server;
let attackerUrl: string;
let browser: Browser;

function config(admin: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    admin: { listen: '127.0.0.1:0', ...admin },
    experiments: { snapshot_interval_s: 0.2 },
    backends: { a: { url: a.url }, b: { url: b.url } },
    routes: [{ name: 'ab', split: { a: 50, b: 50 } }],
  };
}

async function report(): Promise<ExperimentsReport> {
  const res = await gw.admin('/gateway/experiments', { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200, res.text);
  return res.json as ExperimentsReport;
}

/** What the gateway would show had any attack gone through: the experiment, outcomes posted, reloads, passthrough calls. */
async function state(): Promise<{ experiment: string; trajectories: number; outcomes: number; reloads: number; passthrough: number }> {
  const e = (await report()).experiments[0]!;
  const metrics = (await gw.call('/metrics')).text;
  const count = (name: string): number =>
    metrics.split('\n').filter((l) => l.startsWith(name)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return {
    experiment: e.experiment.id,
    trajectories: e.arms.reduce((n, x) => n + x.trajectories, 0),
    outcomes: count('magma_gateway_experiment_outcomes_total'),
    reloads: count('magma_gateway_config_reloads_total'),
    passthrough: a.requestsTo('/debug/act').length,
  };
}

/** Every request a page on another origin can send without a preflight, each the way a page would. */
async function attack(page: Page, admin: string, trajectory: string): Promise<void> {
  await page.evaluate(async ({ admin, trajectory }) => {
    const noCors = (path: string, init: RequestInit): Promise<unknown> => fetch(admin + path, { mode: 'no-cors', ...init }).catch(() => undefined);
    const text = { 'content-type': 'text/plain' };
    await noCors('/gateway/experiments/reset', { method: 'POST', headers: text, body: '{}' });
    await noCors('/gateway/experiments/outcomes', { method: 'POST', headers: text, body: JSON.stringify({ outcomes: [{ trajectory, success: true }] }) });
    await noCors('/gateway/reload', { method: 'POST' });
    await noCors('/gateway/cache', { method: 'DELETE' });
    await noCors('/gateway/backends/a/debug/act', { method: 'POST', headers: text, body: '{"go": true}' });
    await noCors('/gateway/backends/a/debug/act', { method: 'GET' });
    // With a JSON type the browser asks first (a preflight): the listener answers no CORS, so it never sends.
    await fetch(`${admin}/gateway/experiments/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined);
    // An image and a form, which send without fetch.
    await new Promise<void>((resolve) => {
      const img = new Image();
      img.onload = img.onerror = () => resolve();
      img.src = `${admin}/gateway/backends/a/debug/act`;
    });
  }, { admin, trajectory });
  // A form posted as text/plain, the classic cross-site request: the page navigates to the answer.
  const navigated = page.waitForNavigation();
  await page.evaluate((action) => {
    const form = document.createElement('form');
    form.method = 'POST';
    form.enctype = 'text/plain';
    form.action = action;
    const field = document.createElement('input');
    field.name = '{"x":"';
    field.value = '"}';
    form.appendChild(field);
    document.body.appendChild(form);
    form.submit();
  }, `${admin}/gateway/experiments/reset`);
  await navigated;
}

before(async () => {
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // evil.example resolves to 127.0.0.1 for this browser: a rebinding attack after the name's TTL ran out.
    args: ['--no-sandbox', '--disable-gpu', `--host-resolver-rules=MAP ${EVIL} 127.0.0.1`],
  });
  a = await startFakeAgent({ name: 'a' });
  b = await startFakeAgent({ name: 'b' });
  gw = await startGatewayFromFile(config());
  // The attacker's page: another port of the same host (same-site to the browser, another origin).
  attacker = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>cats</title><body>cats</body>'));
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`;
  await postOk(gw, 'seed', [mkInput(0), mkInput(1)]);
});

after(async () => {
  await browser?.close();
  await gw?.close();
  await new Promise((resolve) => attacker?.close(resolve));
  await Promise.all([a?.close(), b?.close()]);
});

test('a page on another origin cannot reset, post outcomes, reload, empty the cache or reach the passthrough of a gateway without a token', async () => {
  const before = await state();
  assert.equal(before.trajectories, 2);
  const trajectory = (await gw.admin('/gateway/experiments/trajectories')).text.split('\n')[0]!;
  const id = (JSON.parse(trajectory) as { trajectory: string }).trajectory;
  const page = await browser.newPage();
  await page.goto(attackerUrl);
  await attack(page, gw.adminUrl, id);
  await page.close();
  assert.deepEqual(await state(), before, 'nothing changed');
  assert.equal(a.requestsTo('/debug/act').length, 0, 'the agent saw nothing');

  // The same requests from the console's own origin go through: the rules refuse the origin, not the browser.
  const own = await browser.newPage();
  await own.goto(`${gw.adminUrl}/`);
  const statuses = await own.evaluate(async () => {
    const json = { 'content-type': 'application/json' };
    const reset = await fetch('/gateway/experiments/reset', { method: 'POST', headers: json, body: '{}' });
    const passthrough = await fetch('/gateway/backends/a/debug/act', { method: 'POST', headers: json, body: '{}' });
    return [reset.status, passthrough.status];
  });
  await own.close();
  assert.deepEqual(statuses, [200, 404], 'reset done; the passthrough reached the agent (which has no such page)');
  const afterwards = await state();
  assert.notEqual(afterwards.experiment, before.experiment, 'a reset from its own origin starts afresh');
  assert.equal(afterwards.passthrough, 1);
});

test(`Host: ${EVIL} (a rebinding name) gets no data: not the config, the experiments nor the export, and no reset`, async () => {
  const port = new URL(gw.adminUrl).port;
  const page = await browser.newPage();
  for (const path of ['/gateway/config', '/gateway/experiments', '/gateway/experiments/trajectories', '/gateway/experiments/trajectories?format=csv', '/']) {
    const res = await page.goto(`http://${EVIL}:${port}${path}`);
    assert.equal(res?.status(), 421, path);
    const body = await res!.text();
    assert.ok(!body.includes(a.url) && !body.includes('"arms"') && !body.includes('trajectory'), `${path}: ${body}`);
  }
  // Now the page is on the rebinding name's origin: its own fetches are same-origin to the browser.
  const before = await state();
  const seen = await page.evaluate(async () => {
    const config = await fetch('/gateway/config');
    const reset = await fetch('/gateway/experiments/reset', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    return [config.status, reset.status, await config.text()];
  });
  await page.close();
  assert.deepEqual(seen.slice(0, 2), [421, 421]);
  assert.ok(!String(seen[2]).includes(a.url));
  assert.deepEqual(await state(), before);
});

/** The console's pages opened in turn, with every CSP violation and page error the browser reports. */
async function browseConsole(page: Page, token?: string): Promise<string[]> {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => {
    // The console's first request without a token is refused (it then asks for one): not a problem.
    if (m.type() === 'error' && !(token !== undefined && /status of 401/.test(m.text()))) problems.push(`console: ${m.text()}`);
  });
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(`${gw.adminUrl}/#/overview`);
  if (token !== undefined) {
    await page.waitForSelector('#token');
    await page.fill('#token', token);
    await page.click('button[type=submit]');
  }
  await page.locator('[data-stat="Version"] .value').getByText(gw.app.gateway.version, { exact: true }).waitFor();
  await page.goto(`${gw.adminUrl}/#/backends`);
  await page.locator('[data-backend="a"]').waitFor();
  await page.goto(`${gw.adminUrl}/#/experiments`);
  await page.locator('[data-experiment="default/ab"] [data-verdict]').waitFor();
  await page.goto(`${gw.adminUrl}/#/batches`);
  await page.locator('tr[data-batch]').first().waitFor();
  return problems;
}

test('the console works from its own origin without a token and with one, and nothing breaks its CSP', async () => {
  // A few trajectories and snapshots, so every page has something to draw.
  await postOk(gw, 'more', [mkInput(2), mkInput(3), mkInput(4)]);
  await waitFor('two history points', async () => ((await gw.admin('/gateway/experiments/history')).json as { points: unknown[] }).points.length >= 2);
  const open = await browser.newPage();
  assert.deepEqual(await browseConsole(open), []);
  await open.close();

  assert.equal((await gw.reload(config({ token: TOKEN }))).status, 200);
  const page = await browser.newPage();
  assert.deepEqual(await browseConsole(page, TOKEN), []);
  await page.close();
});
