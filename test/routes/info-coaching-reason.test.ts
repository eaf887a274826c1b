/**
 * /v1/info's coaching_unavailable_reason says why coaching is off in every case, naming the backends: none
 * advertises it, some do not, or some have not answered /v1/info yet.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useFixtures, type Fixtures } from '../helpers/fixtures.js';

const COACHING = { info: { capabilities: { inference: true, coaching: true }, specialized_coaching: ['speech'], coaching_resume: false } };

async function reason(f: Fixtures, backends: Record<string, { url: string }>): Promise<unknown> {
  const names = Object.keys(backends);
  const gw = await f.gateway({ backends, routes: [{ name: 'ab', split: Object.fromEntries(names.map((n) => [n, 1])) }] });
  const info = (await (await fetch(`${gw.url}/v1/info`)).json()) as Record<string, unknown>;
  assert.equal((info.capabilities as Record<string, boolean>).coaching ?? false, false);
  return info.coaching_unavailable_reason;
}

test('no backend advertises coaching: the reason says so and names them', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a' });
  const b = await f.agent({ name: 'b' });
  assert.equal(await reason(f, { a: { url: a.url }, b: { url: b.url } }), 'no backend reachable through the routes supports coaching: a, b do not advertise it');
});

test('one backend lacks it and one never answered: both are named', async (t) => {
  const f = useFixtures(t);
  const a = await f.agent({ name: 'a', behaviour: COACHING });
  const b = await f.agent({ name: 'b' });
  assert.equal(
    await reason(f, { a: { url: a.url }, b: { url: b.url }, c: { url: 'http://127.0.0.1:1' } }),
    'coaching needs every routed backend to support it; b does not; c has not answered /v1/info yet',
  );
});
