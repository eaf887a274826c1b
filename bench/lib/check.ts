/**
 * Correctness check of one answer before a target is measured: a fast wrong answer is not a result.
 * Checks the contract's ordering rule (input order, then candidate_index from 0), request_id, source_id,
 * completed candidates with a decision, and for history-shaped inputs the memory grown by exactly one step.
 */
import { request } from 'undici';
import type { BenchRequest } from './bodies.js';

export interface CheckResult {
  ok: boolean;
  problems: string[];
  /** Candidates returned. */
  candidates: number;
  /** Memory tags (`memory[memoryKey]`) seen, e.g. `{"backend":"a","route":"default"}`, counted. */
  tags: Record<string, number>;
  /** Response size in bytes. */
  bytes: number;
  /** The response text (kept for the JSON floor of the same bytes). */
  text: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function checkAnswer(req: BenchRequest, status: number, text: string, memoryKey: string): CheckResult {
  const problems: string[] = [];
  const tags: Record<string, number> = {};
  const done = (candidates: number): CheckResult => ({
    ok: problems.length === 0,
    problems: problems.slice(0, 10),
    candidates,
    tags,
    bytes: Buffer.byteLength(text),
    text,
  });
  if (status !== 200) {
    problems.push(`HTTP ${status}: ${text.slice(0, 300)}`);
    return done(0);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    problems.push(`body is not JSON: ${err instanceof Error ? err.message : String(err)}`);
    return done(0);
  }
  if (!Array.isArray(body)) {
    problems.push('body is not a JSON array');
    return done(0);
  }
  const expected: { input: number; k: number }[] = [];
  req.inputs.forEach((inp, i) => {
    for (let k = 0; k < inp.num_outputs; k++) expected.push({ input: i, k });
  });
  if (body.length !== expected.length) problems.push(`${body.length} candidates, expected ${expected.length}`);
  const n = Math.min(body.length, expected.length);
  for (let j = 0; j < n; j++) {
    const c: unknown = body[j];
    const e = expected[j]!;
    const input = req.inputs[e.input]!;
    const where = `candidate ${j} (input ${input.id}, #${e.k})`;
    if (!isObject(c)) {
      problems.push(`${where}: not an object`);
      continue;
    }
    if (c.request_id !== req.request_id) problems.push(`${where}: request_id ${JSON.stringify(c.request_id)}`);
    if (c.source_id !== input.id) problems.push(`${where}: source_id ${JSON.stringify(c.source_id)}`);
    if (c.candidate_index !== e.k) problems.push(`${where}: candidate_index ${JSON.stringify(c.candidate_index)}`);
    if (c.status !== 'completed') {
      problems.push(`${where}: status ${JSON.stringify(c.status)} error ${JSON.stringify(c.error)}`);
      continue;
    }
    if (!isObject(c.output)) problems.push(`${where}: completed without output`);
    if (!isObject(c.memory)) {
      problems.push(`${where}: memory is not an object`);
      continue;
    }
    const tag = c.memory[memoryKey];
    if (tag !== undefined) {
      const key = JSON.stringify(tag);
      tags[key] = (tags[key] ?? 0) + 1;
    }
    const sent = input.memory.history;
    if (Array.isArray(sent)) {
      const got = c.memory.history;
      if (!Array.isArray(got) || got.length !== sent.length + 1) {
        problems.push(`${where}: memory.history not grown by one step`);
      }
      if (!Array.isArray(c.internal_steps) || c.internal_steps.length !== 1) problems.push(`${where}: internal_steps`);
    }
  }
  return done(body.length);
}

/** POST the request once and check the answer. */
export async function checkTarget(url: string, req: BenchRequest, memoryKey: string): Promise<CheckResult> {
  const body = JSON.stringify(req);
  try {
    const r = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    const text = await r.body.text();
    return checkAnswer(req, r.statusCode, text, memoryKey);
  } catch (err) {
    return {
      ok: false,
      problems: [`request failed: ${err instanceof Error ? err.message : String(err)}`],
      candidates: 0,
      tags: {},
      bytes: 0,
      text: '',
    };
  }
}
