/**
 * Micro-benchmark of the answer side (src/protocol/answer/answer-index.ts, src/dispatch/answer-bytes.ts) on an
 * S2-sized backend answer (32 candidates x 64 KB memory + 8 KB internal_steps): what a sub-request's answer
 * costs from its bytes to the client's answer, indexed and written as slices, against what it replaces
 * (parseExact + zod + the candidates as objects + stringifyExact) and the JSON.parse + JSON.stringify floor.
 *
 *   node dist/bench/answer-index.js [--min-ms 600]
 *
 * One line per operation: median wall ms, CPU ms per op (all threads, GC included) and MB/s of answer.
 */
import { isUtf8 } from 'node:buffer';
import { parseArgs } from 'node:util';
import { answerBody, CandidateWriter } from '../src/dispatch/answer-bytes.js';
import { indexAgentResponse } from '../src/protocol/answer/answer-index.js';
import { parseExact, stringifyExact } from '../src/protocol/json/exact-json.js';
import { readAgentRequest } from '../src/protocol/request/read-request.js';
import { checkIndexedResponse } from '../src/protocol/answer/response-check.js';
import type { AgentOutput } from '../src/protocol/types.js';
import { bodyText, fillerText, historyRequest } from './lib/bodies.js';
import { checkSubResponse, fromBackend } from './lib/decoded-answer.js';
import { MicroBench } from './lib/micro.js';

const { values } = parseArgs({ options: { 'min-ms': { type: 'string', default: '600' } } });
const MIN_MS = Number(values['min-ms']);
const bench = new MicroBench(MIN_MS, 52);
const measure = bench.measure.bind(bench);

const KEY = '_magma_gateway';
const limits = { maxOutputsPerInput: 1024, maxJsonDepth: 128, memoryKey: KEY };
const req = historyRequest('bench-answer-index-0001', 32, 64);
const read = readAgentRequest(Buffer.from(bodyText(req)), limits);
if (!read.ok) throw new Error('readAgentRequest refused the S2 body');
const { request } = read;
const answerText = JSON.stringify(
  req.inputs.map((inp, i) => ({
    request_id: req.request_id,
    source_id: inp.id,
    candidate_index: 0,
    status: 'completed',
    memory: { ...(inp.memory as object), step: i + 1 },
    internal_steps: [{ kind: 'reasoning', text: fillerText(3000 + i, 8192) }],
    output: { say: 'ok', tool_calls: [{ name: 'pick', arguments: { object: 'plate_1' }, target_robot_name: 'dish_robot' }] },
    error: null,
  })),
);
const buf = Buffer.from(answerText);
const shape = { requestId: request.request_id, inputs: request.inputs.map((inp) => ({ id: inp.id, count: 1 })) };
const tag = { backend: 'agent-a', route: 'default' };
process.stdout.write(`S2 answer: ${(buf.length / 1024).toFixed(0)} KB\n`);

measure('floor: JSON.parse + JSON.stringify', buf.length, () => JSON.stringify(JSON.parse(buf.toString('utf8'))));
measure('before: parseExact + zod + objects + stringifyExact', buf.length, () => {
  const parsed = parseExact(buf.toString('utf8'));
  const check = checkSubResponse(parsed.value, shape);
  if (!check.ok) throw new Error(check.reason);
  const outputs: AgentOutput[] = check.slots.map((row, i) => {
    const s = row[0]!;
    if (!s.ok) throw new Error(s.reason);
    return fromBackend(request.request_id, request.inputs[i]!, 0, s.candidate, KEY, tag);
  });
  return stringifyExact(outputs);
});
measure('index only: isUtf8 + indexAgentResponse', buf.length, () => isUtf8(buf) && indexAgentResponse(buf, 128, KEY));
measure('after: index + check + slices + answerBody', buf.length, () => {
  if (!isUtf8(buf)) throw new Error('not UTF-8');
  const idx = indexAgentResponse(buf, 128, KEY);
  if (!idx.ok) throw idx.reject;
  const check = checkIndexedResponse(buf, idx.elements, shape);
  if (!check.ok) throw new Error(check.reason);
  const writer = new CandidateWriter(request.request_id, KEY);
  const outputs = check.slots.map((row, i) => {
    const s = row[0]!;
    if (!s.ok) throw new Error(s.reason);
    return writer.fromIndexed(request.request_id, request.inputs[i]!, 0, s.candidate, tag);
  });
  return answerBody(outputs);
});
if (bench.calls < 0) process.stdout.write('');
