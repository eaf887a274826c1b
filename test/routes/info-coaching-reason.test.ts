/**
 * /v1/info's coaching_unavailable_reason says why coaching is off in every case, naming the backends: none
 * advertises it, some do not, or some have not answered /v1/info yet.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startFakeAgent } from '../helpers/fake-agent.js';
import { startGateway } from '../helpers/gateway.js';

const COACHING = { info: { capabilities: { inference: true, coaching: true }, specialized_coaching: ['speech'], coaching_resume: false } };

async function reason(backends: Record<string, { url: string }>): Promise<unknown> {
  const names = Object.keys(backends);
  const gw = await startGateway({ backends, routes: [{ name: 'ab', split: Object.fromEntries(names.map((n) => [n, 1])) }] });
  try {
    const info = (await (await fetch(`${gw.url}/v1/info`)).json()) as Record<string, unknown>;
    assert.equal((info.capabilities as Record<string, boolean>).coaching ?? false, false);
    return info.coaching_unavailable_reason;
  } finally {
    await gw.close();
  }
}

test('no backend advertises coaching: the reason says so and names them', async () => {
  const a = await startFakeAgent({ name: 'a' });
  const b = await startFakeAgent({ name: 'b' });
  try {
    assert.equal(await reason({ a: { url: a.url }, b: { url: b.url } }), 'no backend reachable through the routes supports coaching: a, b do not advertise it');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('one backend lacks it and one never answered: both are named', async () => {
  const a = await startFakeAgent({ name: 'a', behaviour: COACHING });
  const b = await startFakeAgent({ name: 'b' });
  try {
    assert.equal(
      await reason({ a: { url: a.url }, b: { url: b.url }, c: { url: 'http://127.0.0.1:1' } }),
      'coaching needs every routed backend to support it; b does not; c has not answered /v1/info yet',
    );
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
