/**
 * The test fixtures (helpers/fixtures.ts): what a test starts is closed when it ends, last started first, and
 * one failing undo does not keep the others from running.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useFixtures } from './fixtures.js';

/** A context whose `after` hooks the test runs itself, so it can look at what they did. */
function manualContext(): { after(fn: () => Promise<void>): void; end(): Promise<void> } {
  const hooks: (() => Promise<void>)[] = [];
  return { after: (fn) => void hooks.push(fn), end: async () => { for (const h of hooks) await h(); } };
}

test('a gateway and an agent a test started are closed when it ends, the gateway first', async (t) => {
  const closed: string[] = [];
  let agentUrl = '';
  let gatewayUrl = '';
  await t.test('a test that starts an agent and a gateway in front of it', async (inner) => {
    const f = useFixtures(inner);
    const agent = await f.agent({ name: 'x' });
    const gw = await f.gateway({ probe_interval_s: 3600, backends: { x: { url: agent.url } }, routes: [{ name: 'd', backend: 'x' }] });
    for (const [name, o] of [['agent', agent], ['gateway', gw]] as const) {
      const close = o.close.bind(o);
      o.close = () => (closed.push(name), close());
    }
    [agentUrl, gatewayUrl] = [agent.url, gw.url];
    assert.equal((await gw.post({ request_id: 'r', inputs: [] })).status, 200);
  });
  assert.deepEqual(closed, ['gateway', 'agent']);
  await assert.rejects(fetch(`${gatewayUrl}/health`), 'the gateway no longer listens');
  await assert.rejects(fetch(`${agentUrl}/health`), 'the agent no longer listens');
});

test('after a failed test every undo still runs, and the first failure is reported', async () => {
  const ctx = manualContext();
  const f = useFixtures(ctx);
  const ran: number[] = [];
  f.defer(() => void ran.push(1));
  f.defer(() => {
    ran.push(2);
    throw new Error('undo 2 failed');
  });
  f.defer(async () => {
    ran.push(3);
    throw new Error('undo 3 failed');
  });
  await assert.rejects(ctx.end(), /undo 3 failed/);
  assert.deepEqual(ran, [3, 2, 1]);
});
