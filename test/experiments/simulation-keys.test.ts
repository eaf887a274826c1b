/**
 * assign_by through the real recorder (test/experiments/simulate.ts): with keys whose trajectories share a
 * difficulty, the key-unit interval keeps its coverage, the SRM counts keys, and few keys read t with K - 2 df.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { seededRandom } from '../../bench/lib/seeded-random.js';
import { beta22, experiment, gateway } from './simulate.js';

let keyed: FastifyInstance;
before(async () => {
  keyed = await gateway({ assign_by: 'attributes.scenario' });
});
after(() => keyed.close());

const KEY_RUNS = 150;
const KEYS = 40;

test(`assign_by, ${KEY_RUNS} seeded experiments of ${KEYS} keys x 3 trajectories sharing the key's difficulty: keys as the unit keep coverage`, async (t) => {
  const rnd = seededRandom(20_261_203);
  let covers = 0;
  for (let run = 0; run < KEY_RUNS; run++) {
    // One difficulty per key, shared by its trajectories: they are correlated, and the key is the unit.
    const difficulty = Array.from({ length: KEYS }, () => beta22(rnd));
    const o = await experiment(run, rnd, {
      name: 'keys',
      on: keyed,
      trajectories: KEYS * 3,
      attributes: (i) => ({ scenario: `run${run}-s${i % KEYS}` }),
      chance: (i) => difficulty[i % KEYS]!,
    });
    if (o.fixedCovers) covers++;
    assert.equal(o.srmUnit, 'key');
    assert.equal(o.srmTotal, KEYS, `run ${run}: the SRM counts keys`);
    assert.equal(o.fixedMethod, 'delta method, key as unit, t with 38 df', `run ${run}`);
  }
  const rate = covers / KEY_RUNS;
  t.diagnostic(`key-unit fixed interval covers 0: ${(rate * 100).toFixed(1)}% (${KEY_RUNS} runs)`);
  // 150 runs at 95%: SD 1.8%; the band is about 3 SD.
  assert.ok(rate >= 0.89 && rate <= 0.995, `covered in ${(rate * 100).toFixed(1)}% of runs`);
});
