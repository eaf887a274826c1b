/**
 * Micro-benchmark of the gateway's JSON path on an S2-sized batch (32 inputs x 64 KB history memory, and the
 * bench agent's answer to it: memory grown one step + 8 KB internal_steps per candidate), against plain
 * JSON.parse / JSON.stringify of the same bytes. Prints ms per op, MB/s and ms/MB.
 *
 *   node dist/bench/json-path.js [--quick] [--json]     the table (JSON with --json)
 *   node dist/bench/json-path.js --floor [--quick]      S5 only: the floor per batch as one JSON line
 *
 * S5 ("floor") = JSON.parse + JSON.stringify of the request and of the response: what any gateway that reads
 * what it forwards must spend at least, per batch. CPU is process.cpuUsage (all threads, GC helpers included),
 * the same measure /proc gives for the gateway process.
 */
import { parseArgs } from 'node:util';
import { parseExact, stringifyExact } from '../src/protocol/json/exact-json.js';
import { parseAgentRequest } from '../src/protocol/request.js';
import type { SubRequestShape } from '../src/protocol/answer/response-check.js';
import { checkSubResponse } from './lib/decoded-answer.js';
import { makeResponder } from './lib/agent-response.js';
import { bodyText, historyRequest } from './lib/bodies.js';
import { median } from './lib/stats.js';

export interface OpResult {
  name: string;
  bytes: number;
  iterations: number;
  /** Median wall time per op. */
  ms: number;
  /** CPU time per op (all threads). */
  cpuMs: number;
  mbPerS: number;
  msPerMb: number;
}

export interface FloorResult {
  requestBytes: number;
  responseBytes: number;
  /** Median wall ms of parse+stringify of request and response, per batch. */
  ms: number;
  /** CPU ms (all threads) per batch. */
  cpuMs: number;
  parts: OpResult[];
}

let sink = 0;
const MB = 1024 * 1024;

function measure(name: string, bytes: number, fn: () => unknown, minMs: number): OpResult {
  // Warm-up: let the JIT settle.
  const warmEnd = performance.now() + Math.min(300, minMs / 2);
  for (let i = 0; i < 3 || performance.now() < warmEnd; i++) fn();
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  while (times.length < 10 || performance.now() - t0 < minMs) {
    const a = performance.now();
    const v = fn();
    times.push(performance.now() - a);
    sink += typeof v === 'string' ? v.length : v === undefined ? 0 : 1;
  }
  const cpu = process.cpuUsage(cpu0);
  const ms = median(times);
  return {
    name,
    bytes,
    iterations: times.length,
    ms,
    cpuMs: (cpu.user + cpu.system) / 1000 / times.length,
    mbPerS: bytes / MB / (ms / 1000),
    msPerMb: ms / (bytes / MB),
  };
}

/** The S2 request body (fresh request_id) and the bench agent's answer to it. */
export function s2Bodies(): { request: string; response: string } {
  const request = bodyText(historyRequest('bench-json-path-0001', 32, 64));
  const answer = makeResponder({ stepKb: 2, internalKb: 8 })(request);
  if ('error' in answer) throw new Error(answer.error);
  if (!('body' in answer)) throw new Error('the S2 answer was expected as one string');
  return { request, response: answer.body };
}

/** S5: the floor of a gateway that reads what it forwards, per batch. */
export function floor(request: string, response: string, minMs: number): FloorResult {
  const reqValue: unknown = JSON.parse(request);
  const respValue: unknown = JSON.parse(response);
  const parts = [
    measure('JSON.parse(request)', request.length, () => JSON.parse(request), minMs / 4),
    measure('JSON.stringify(request)', request.length, () => JSON.stringify(reqValue), minMs / 4),
    measure('JSON.parse(response)', response.length, () => JSON.parse(response), minMs / 4),
    measure('JSON.stringify(response)', response.length, () => JSON.stringify(respValue), minMs / 4),
  ];
  const whole = measure(
    'floor per batch',
    request.length + response.length,
    () => {
      const a: unknown = JSON.parse(request);
      const b: unknown = JSON.parse(response);
      return JSON.stringify(a).length + JSON.stringify(b).length;
    },
    minMs,
  );
  return { requestBytes: request.length, responseBytes: response.length, ms: whole.ms, cpuMs: whole.cpuMs, parts };
}

/** Non-canonical numbers in every memory (a big integer, `1.0`): forces exact-json's rewrite path. */
function withRiskyNumbers(request: string): string {
  return request.replaceAll('"memory":{"history"', '"memory":{"seed":123456789012345678901234,"temperature":1.0,"history"');
}

export function jsonPathTable(minMs: number): OpResult[] {
  const { request, response } = s2Bodies();
  const risky = withRiskyNumbers(request);
  const limits = { maxOutputsPerInput: 1024 };
  const reqValue: unknown = JSON.parse(request);
  const respValue: unknown = JSON.parse(response);
  const parsed = parseAgentRequest(request, limits);
  if (!parsed.ok) throw new Error(`parseAgentRequest rejected the S2 body: ${JSON.stringify(parsed.detail).slice(0, 500)}`);
  const riskyParsed = parseExact(risky);
  if (!riskyParsed.marked) throw new Error('the risky body was expected to hold number markers');
  const shape: SubRequestShape = {
    requestId: parsed.request.request_id,
    inputs: parsed.request.inputs.map((inp) => ({ id: inp.id, count: 1 })),
  };
  const respExact = parseExact(response).value;
  const check = checkSubResponse(respExact, shape);
  if (!check.ok) throw new Error(`checkSubResponse rejected the S2 answer: ${check.reason}`);

  const out: OpResult[] = [];
  out.push(measure('JSON.parse request', request.length, () => JSON.parse(request), minMs));
  out.push(measure('parseExact request', request.length, () => parseExact(request), minMs));
  out.push(measure('parseAgentRequest request', request.length, () => parseAgentRequest(request, limits), minMs));
  out.push(measure('JSON.stringify request', request.length, () => JSON.stringify(reqValue), minMs));
  out.push(measure('stringifyExact request', request.length, () => stringifyExact(parsed.request), minMs));
  out.push(measure('JSON.parse response', response.length, () => JSON.parse(response), minMs));
  out.push(measure('parseExact response', response.length, () => parseExact(response), minMs));
  out.push(measure('checkSubResponse response', response.length, () => checkSubResponse(respExact, shape), minMs));
  out.push(measure('JSON.stringify response', response.length, () => JSON.stringify(respValue), minMs));
  out.push(measure('stringifyExact response', response.length, () => stringifyExact(respExact), minMs));
  out.push(measure('parseExact request+big ints', risky.length, () => parseExact(risky), minMs));
  out.push(
    measure('stringifyExact request+big ints', risky.length, () => stringifyExact(riskyParsed.value), minMs),
  );
  out.push(
    measure('parseAgentRequest request+big ints', risky.length, () => parseAgentRequest(risky, limits), minMs),
  );
  // The whole JSON path of one batch through the gateway vs the floor.
  out.push(
    measure(
      'gateway JSON path per batch',
      request.length + response.length,
      () => {
        const r = parseAgentRequest(request, limits);
        if (!r.ok) return 0;
        const sub = stringifyExact({ request_id: r.request.request_id, inputs: r.request.inputs });
        const p = parseExact(response);
        const c = checkSubResponse(p.value, shape);
        return sub.length + (c.ok ? stringifyExact(p.value).length : 0);
      },
      minMs,
    ),
  );
  out.push(
    measure(
      'floor per batch (JSON.parse+stringify x2)',
      request.length + response.length,
      () => {
        const a: unknown = JSON.parse(request);
        const b: unknown = JSON.parse(response);
        return JSON.stringify(a).length + JSON.stringify(b).length;
      },
      minMs,
    ),
  );
  return out;
}

function printTable(rows: OpResult[]): void {
  const head = ['op', 'KB', 'ms/op', 'cpu ms/op', 'MB/s', 'ms/MB', 'x JSON'];
  const base = new Map<string, number>();
  for (const r of rows) if (r.name.startsWith('JSON.')) base.set(r.name.split(' ')[1]!, r.ms);
  const lines = rows.map((r) => {
    const what = r.name.split(' ')[1]!;
    const ref = r.name.startsWith('JSON.') ? undefined : r.name.startsWith('stringify') ? 'stringify' : 'parse';
    let x = '';
    if (ref !== undefined && (what === 'request' || what === 'response')) {
      const b = rows.find((q) => q.name === `JSON.${ref} ${what}`);
      if (b) x = (r.ms / b.ms).toFixed(2);
    }
    return [
      r.name,
      (r.bytes / 1024).toFixed(0),
      r.ms.toFixed(2),
      r.cpuMs.toFixed(2),
      r.mbPerS.toFixed(0),
      r.msPerMb.toFixed(2),
      x,
    ];
  });
  const all = [head, ...lines];
  const w = head.map((_, i) => Math.max(...all.map((l) => l[i]!.length)));
  for (const l of all) console.log(l.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
  const path = rows.find((r) => r.name === 'gateway JSON path per batch');
  const fl = rows.find((r) => r.name.startsWith('floor per batch'));
  if (path && fl) console.log(`\ngateway JSON path / floor: ${(path.ms / fl.ms).toFixed(2)}x (per batch ${path.ms.toFixed(1)} ms vs ${fl.ms.toFixed(1)} ms)`);
}

function main(): void {
  const { values } = parseArgs({
    options: { floor: { type: 'boolean' }, quick: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  const minMs = values.quick ? 300 : 1500;
  if (values.floor) {
    const { request, response } = s2Bodies();
    process.stdout.write(JSON.stringify({ floor: floor(request, response, minMs * 2) }) + '\n');
    return;
  }
  const rows = jsonPathTable(minMs);
  if (values.json) process.stdout.write(JSON.stringify({ jsonPath: rows }) + '\n');
  else printTable(rows);
  if (sink === -1) console.log(sink);
}

main();
