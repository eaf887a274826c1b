/**
 * Identical arms through the real recorder (test/experiments/simulate.ts): the fixed interval's and the
 * always-valid interval's error rates, and the always-valid result present once both arms pass the burn-in.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { seededRandom } from '../../bench/lib/seeded-random.js';
import { beta22, experiment, gateway } from './simulate.js';

const RUNS = 300;
const TRAJECTORIES = 60;

let app: FastifyInstance;
before(async () => {
  app = await gateway({});
});
after(() => app.close());

test(`identical arms, ${RUNS} seeded experiments: the trajectory-level intervals keep their error rates`, async (t) => {
  const rnd = seededRandom(20_261_201);
  let fixed = 0;
  let sequential = 0;
  let pastBurnIn = 0;
  for (let run = 0; run < RUNS; run++) {
    const o = await experiment(run, rnd, { name: 'null', on: app, trajectories: TRAJECTORIES, chance: () => beta22(rnd) });
    if (o.fixedExcludes) fixed++;
    if (o.sequentialEverExcludes) sequential++;
    // An arm with 20 trajectories is past the burn-in by the last look (all 60 have lines by then); the hash
    // leaves fewer in one arm in a few runs, and those must have none.
    assert.equal(o.lastSequential, o.fewest >= 20, `run ${run}: ${o.fewest} trajectories in the smaller arm, always-valid result ${o.lastSequential}`);
    if (o.lastSequential) pastBurnIn++;
  }
  assert.ok(pastBurnIn >= RUNS * 0.95, `only ${pastBurnIn} runs past the burn-in`);
  const fixedRate = fixed / RUNS;
  const seqRate = sequential / RUNS;
  t.diagnostic(`fixed interval excludes 0: ${(fixedRate * 100).toFixed(1)}%; always-valid at any look: ${(seqRate * 100).toFixed(1)}% (${RUNS} runs)`);
  assert.ok(fixedRate >= 0.015 && fixedRate <= 0.10, `fixed interval excluded 0 in ${(fixedRate * 100).toFixed(1)}% of runs`);
  assert.ok(seqRate <= 0.08, `always-valid interval excluded 0 at some look in ${(seqRate * 100).toFixed(1)}% of runs`);
});

