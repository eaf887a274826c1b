/**
 * Probes are bounded as a whole by probe_timeout_s and run per replica (upstream/prober.ts): a backend whose
 * /health trickles one byte per second forever (which no per-chunk timeout ever ends) delays no other
 * replica's probes, so a recovered backend becomes ready within a few probe intervals and /health follows.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import type { BackendView } from '../../src/admin/views.js';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';
import { http } from '../helpers/config-file.js';
import { waitFor } from '../helpers/wait.js';
import { useFixtures, type Fixtures } from '../helpers/fixtures.js';

/** A real agent whose /health, once `trickle` is on, sends its headers and then one byte per second forever. */
async function tricklingAgent(f: Fixtures): Promise<{ url: string; trickle: () => void; open: () => { start: number; end?: number }[] }> {
  let trickling = false;
  const windows: { start: number; end?: number }[] = [];
  const info = JSON.stringify(inferenceOnlyInfo('fake-trickle', '0.0.0-test'));
  const { url } = await f.server((req, res: ServerResponse) => {
    req.resume();
    if (req.url === '/health' && trickling) {
      const w: { start: number; end?: number } = { start: Date.now() };
      windows.push(w);
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 1000);
      res.write(' ');
      res.once('close', () => {
        clearInterval(timer);
        w.end = Date.now();
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/v1/info' ? info : '{"status":"ready"}');
  });
  return { url, trickle: () => (trickling = true), open: () => windows };
}

test("a backend trickling /health forever does not freeze another backend's probes", async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a', behaviour: { health: 503 } });
  const b = await tricklingAgent(f);
  const gw = await f.gateway({
    probe_interval_s: 0.1,
    probe_timeout_s: 3,
    backends: { a: { url: a.url }, b: { url: b.url } },
    // /health is ready exactly when `a` is: route ra needs it, rb can fall back to it.
    routes: [
      { name: 'rb', match: { 'header.x-route': 'b' }, backend: 'b', fallback: ['a'] },
      { name: 'ra', backend: 'a' },
    ],
  });
  const state = async (name: string): Promise<BackendView['replicas'][number]> => {
    const view = (await http(`${gw.adminUrl}/gateway/backends`)).json as { backends: BackendView[] };
    return view.backends.find((x) => x.name === name)!.replicas[0]!;
  };
  assert.equal((await state('a')).state, 'not_ready');
  assert.equal((await state('b')).state, 'ready');
  assert.equal((await http(`${gw.url}/health`)).status, 503);

  b.trickle();
  await waitFor("b's probe hanging on its trickling /health", () => b.open().some((w) => w.end === undefined));
  a.setBehaviour({});
  await waitFor('a ready while b hangs', async () => (await state('a')).state === 'ready', { timeoutMs: 2_000 });
  const readyAt = Date.now();
  assert.ok(
    b.open().some((w) => w.start < readyAt && (w.end === undefined || w.end >= readyAt)),
    "a became ready while one of b's probes was still hanging",
  );
  assert.equal((await http(`${gw.url}/health`)).status, 200, '/health follows a');

  // b's probe ends at probe_timeout_s as a whole, however steadily bytes keep coming.
  await waitFor('b not ready', async () => (await state('b')).state === 'not_ready', { timeoutMs: 6_000 });
  const rb = await state('b');
  assert.match(rb.last_probe?.error ?? '', /probe_timeout_s \(3 s\)/);
  // The trickle never ends by itself: a probe connection that ended was closed by the gateway at its timeout.
  assert.ok(b.open().some((w) => w.end !== undefined), 'the gateway closed the hanging probe');
});
