/**
 * Micro-benchmark of the byte indexer (src/protocol/request/request-index.ts) on S2-sized request bodies (32 inputs x
 * 64 KB of history memory), against what it replaces (parseAgentRequest: exact parse + zod) and the plain
 * JSON.parse floor of the same bytes. Also the sub-request writer (slices of the body) against
 * stringifyExact of the decoded request.
 *
 *   node dist/bench/json-index.js [--min-ms 600]
 *
 * One line per operation: median wall ms, CPU ms per op (all threads, GC included) and MB/s.
 */
import { isUtf8 } from 'node:buffer';
import { parseArgs } from 'node:util';
import { stringifyExact } from '../src/protocol/json/exact-json.js';
import { readAgentRequest } from '../src/protocol/request/read-request.js';
import { parseAgentRequest } from '../src/protocol/request.js';
import { indexAgentRequest } from '../src/protocol/request/request-index.js';
import { subRequestBody } from '../src/protocol/request/sub-request.js';
import { bodyText, historyRequest } from './lib/bodies.js';
import { MicroBench } from './lib/micro.js';

const { values } = parseArgs({ options: { 'min-ms': { type: 'string', default: '600' } } });
const MIN_MS = Number(values['min-ms']);
const bench = new MicroBench(MIN_MS, 46);
const measure = bench.measure.bind(bench);

const limits = { maxOutputsPerInput: 1024, maxJsonDepth: 128, memoryKey: '_magma_gateway' };
const TAG = '"_magma_gateway":{"backend":"agent-a","route":"default"},';

const variants: [string, string][] = [
  ['S2', bodyText(historyRequest('bench-json-index-0001', 32, 64))],
  [
    'S2, tagged memory + big ints',
    bodyText(historyRequest('bench-json-index-0002', 32, 64)).replaceAll(
      '"memory":{"history"',
      `"memory":{${TAG}"seed":123456789012345678901234,"temperature":1.0,"history"`,
    ),
  ],
];

for (const [label, text] of variants) {
  const buf = Buffer.from(text);
  process.stdout.write(`\n${label}: ${(buf.length / 1024).toFixed(0)} KB\n`);
  const read = readAgentRequest(buf, limits);
  if (!read.ok) throw new Error(`readAgentRequest refused the ${label} body: ${JSON.stringify(read).slice(0, 400)}`);
  const parsed = parseAgentRequest(text, limits);
  if (!parsed.ok) throw new Error(`parseAgentRequest refused the ${label} body`);
  measure('JSON.parse(buf.toString())', buf.length, () => JSON.parse(buf.toString('utf8')));
  measure('parseAgentRequest(buf.toString())', buf.length, () => parseAgentRequest(buf.toString('utf8'), limits));
  measure('isUtf8(buf)', buf.length, () => isUtf8(buf));
  measure('indexAgentRequest(buf)', buf.length, () => indexAgentRequest(buf, limits));
  measure('readAgentRequest(buf) (isUtf8 + index + request)', buf.length, () => readAgentRequest(buf, limits));
  const { request, index } = read;
  const rid = buf.subarray(index.requestIdSpan.start, index.requestIdSpan.end);
  const legs = request.inputs.map((inp) => ({ raw: inp.raw!, count: 1 })); // read through the indexer: raw is set
  measure('subRequestBody (slices joined once)', buf.length, () => subRequestBody(rid, legs));
  measure('stringifyExact(decoded request) (before)', buf.length, () => stringifyExact(parsed.request));
}
if (bench.calls < 0) process.stdout.write('');
