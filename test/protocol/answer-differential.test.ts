/**
 * The answer indexer (src/protocol/answer/answer-index.ts + checkIndexedResponse) against the reader it replaced
 * (parseExact + bench/lib/decoded-answer.ts, zod's agentOutputSchema) as the oracle: seeded generated backend
 * answers, valid and broken, must place the same slots with the same verdicts and reasons (a slot holds only what
 * the indexer took, so a candidate only the oracle accepts fails here), and every candidate must carry the exact
 * bytes the generator wrote for its memory, internal_steps, output and error, the tag written in.
 *
 * The seed is fixed so CI runs the same cases; `DIFF_SEED=<n>` runs others, `DIFF_CASES=<n>` more of them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CandidateWriter, answerBody } from '../../src/dispatch/answer-bytes.js';
import { joinBody } from '../../src/protocol/answer/answer-body.js';
import { indexAgentResponse } from '../../src/protocol/answer/answer-index.js';
import { parseExact } from '../../src/protocol/json/exact-json.js';
import { checkIndexedResponse, type SubRequestShape } from '../../src/protocol/answer/response-check.js';
import type { AgentOutput } from '../../src/protocol/types.js';
import type { IndexedAgentInput } from '../../src/protocol/request/indexed-request.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import { seededRandom } from '../../bench/lib/seeded-random.js';
import { checkSubResponse } from '../../bench/lib/decoded-answer.js';

const SEED = Number(process.env.DIFF_SEED ?? 20250101);
const CASES = Number(process.env.DIFF_CASES ?? 2000);
const KEY = '_gw';
const DEPTH = 16;


class Gen {
  private readonly r: () => number;
  constructor(seed: number) {
    this.r = seededRandom(seed);
  }
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  /** A random comparator result, to shuffle members. */
  sign(): number {
    return this.chance(0.5) ? 1 : -1;
  }
  ws(): string {
    return this.chance(0.8) ? '' : this.pick([' ', '\n  ', '\t', ' \r\n']);
  }
  str(): string {
    return this.pick(['"a"', '"10"', '"\\u00e9t\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"', '"é"', '"x\\"y"', '""', '"__proto__"']);
  }
  num(): string {
    return this.pick(['0', '-0', '1.0', '1e5', '12345678901234567890', '0.10', '-3', '2.5E-3', '7']);
  }
  value(depth: number): string {
    const k = depth > 4 ? this.int(4) : this.int(7);
    if (k === 0) return this.str();
    if (k === 1) return this.num();
    if (k === 2) return this.pick(['true', 'false', 'null']);
    if (k === 3) return this.num();
    if (k === 4) return `[${Array.from({ length: this.int(3) }, () => this.ws() + this.value(depth + 1) + this.ws()).join(',')}]`;
    return this.obj(depth + 1);
  }
  obj(depth: number, keys?: string[]): string {
    const names = keys ?? Array.from({ length: this.int(4) }, () => this.pick(['"b"', '"10"', '"2"', '"__proto__"', `"${KEY}"`, '"k"', '"b"']));
    return `{${names.map((n) => `${this.ws()}${n}${this.ws()}:${this.ws()}${this.value(depth)}`).join(',')}${this.ws()}}`;
  }
}

/** One candidate as members, valid unless the generator breaks it. */
function candidate(g: Gen, requestId: string, sourceId: string, index: number): string {
  const completed = g.chance(0.7);
  const members: [string, string][] = [
    ['request_id', JSON.stringify(requestId)],
    ['source_id', sourceId],
    ['candidate_index', String(index)],
    ['status', completed ? '"completed"' : '"error"'],
    ['memory', g.obj(2)],
  ];
  if (g.chance(0.7)) members.push(['internal_steps', `[${Array.from({ length: g.int(3) }, () => g.obj(3)).join(',')}]`]);
  const decision = (): string => {
    const parts: string[] = [];
    if (g.chance(0.8)) parts.push(`"say":${g.str()}`);
    if (g.chance(0.6)) parts.push(`"tool_calls":[{"name":"pick","arguments":${g.obj(5)},"target_robot_name":"r"}]`);
    if (g.chance(0.5)) parts.reverse();
    return `{${parts.join(',')}}`;
  };
  const error = (): string => `{"code":"model_error","message":"m"${g.chance(0.5) ? ',"component":null' : ''}}`;
  if (completed) {
    members.push(['output', decision()]);
    if (g.chance(0.5)) members.push(['error', 'null']);
  } else {
    members.push(['error', error()]);
    if (g.chance(0.5)) members.push(['output', 'null']);
  }
  // Mutations: each breaks one rule of agentOutputSchema (or none: repeats and reorderings are valid).
  const m = g.int(24);
  if (m === 0) members.push(['extra', '1']);
  else if (m === 1) members[1] = ['source_id', '1.0'];
  else if (m === 2) members[2] = ['candidate_index', '-0'];
  else if (m === 3) members[3] = ['status', '"Completed"'];
  else if (m === 4) members[4] = ['memory', '[]'];
  else if (m === 5) members.push(['internal_steps', '[1]']);
  else if (m === 6) members.push(['output', completed ? 'null' : decision()]);
  else if (m === 7) members.push(['error', completed ? error() : 'null']);
  else if (m === 8) members.push(['output', '{"say":1}']);
  else if (m === 9) members.push(['error', '{"code":"","message":"m"}']);
  else if (m === 10) members[0] = ['request_id', '""'];
  else if (m === 11) members.splice(4, 1);
  else if (m === 12) members.push(['status', members[3]![1]]);
  else if (m === 13) members.push(['output', completed ? '{"say":"x","tool_calls":[{"name":"p","target_robot_name":""}]}' : 'null']);
  else if (m === 14) members.push(['error', completed ? 'null' : '{"code":"c","message":"m","component":3}']);
  else if (m === 15) members.reverse();
  // A repeated field counts by its last occurrence: a broken one before a valid one is valid.
  else if (m === 16) members.unshift(g.pick([['request_id', '""'], ['source_id', '1.0'], ['status', '"x"'], ['memory', '[]'], ['internal_steps', '[1]'], ['output', '{"say":1}'], ['error', '3']]));
  else if (m === 17) members.push(completed ? ['output', '{"say":1,"tool_calls":5,"say":"x","tool_calls":[{"name":"p","arguments":1,"target_robot_name":"r","arguments":{}}]}'] : ['error', '{"code":"","component":3,"code":"c","message":"m","component":null}']);
  if (g.chance(0.3)) members.sort(() => g.sign());
  return `{${members.map(([k, v]) => `${g.ws()}"${k}"${g.ws()}:${g.ws()}${v}`).join(',')}}`;
}

/** The inputs the candidates answer, read from a client's body as the gateway reads them. */
const INPUTS = (() => {
  const input = (id: number): string => `{"id":${id},"instruction":{"type":"env","content":"x"},"num_outputs":2}`;
  const r = readAgentRequest(Buffer.from(`{"request_id":"r1","inputs":[${input(1)},${input(2)}]}`), { maxOutputsPerInput: 8, maxJsonDepth: DEPTH, memoryKey: KEY });
  assert.ok(r.ok);
  return r.request.inputs;
})();

function inputOf(id: string): IndexedAgentInput {
  return INPUTS[Number(id) - 1] ?? assert.fail(`no input ${id}`);
}

function check(text: string, label: string): 'whole' | 'slots' {
  const buf = Buffer.from(text, 'utf8');
  const shape: SubRequestShape = { requestId: 'r1', inputs: [{ id: 1, count: 2 }, { id: 2, count: 2 }] };
  const indexed = indexAgentResponse(buf, DEPTH, KEY);
  let oracle: ReturnType<typeof checkSubResponse>;
  try {
    const p = parseExact(text, { maxDepth: DEPTH });
    oracle = p.nonFinite ? { ok: false, reason: 'non-finite' } : checkSubResponse(p.value, shape);
  } catch {
    oracle = { ok: false, reason: 'not JSON' };
  }
  if (!indexed.ok) {
    assert.equal(oracle.ok, false, `${label}: the indexer refused an answer the oracle placed: ${indexed.reject.message}\n${text}`);
    return 'whole';
  }
  const mine = checkIndexedResponse(buf, indexed.elements, shape);
  assert.equal(mine.ok, oracle.ok, `${label}: verdict\n${text}`);
  if (!mine.ok || !oracle.ok) {
    assert.equal(mine.ok ? '' : mine.reason, oracle.ok ? '' : oracle.reason, label);
    return 'whole';
  }
  assert.equal(mine.extras, oracle.extras, `${label}: extras`);
  const writer = new CandidateWriter('r1', KEY);
  mine.slots.forEach((row, i) =>
    row.forEach((slot, c) => {
      const want = oracle.slots[i]![c]!;
      assert.equal(slot.ok, want.ok, `${label}: slot ${i}/${c}: ${[slot, want].map((s) => (s.ok ? '' : s.reason)).join('')}\n${text}`);
      if (!slot.ok || !want.ok) {
        assert.equal(slot.ok ? '' : slot.reason, want.ok ? '' : want.reason, `${label}: slot ${i}/${c} reason`);
        return;
      }
      // The candidate as the client gets it: the backend's bytes (offsets are byte offsets), decoded equal to
      // the oracle's candidate.
      const tag = { backend: 'a', route: 'default' };
      const out = writer.fromIndexed('r1', inputOf(String(i + 1)), c, slot.candidate, tag);
      const written = parseExact(joinBody(answerBody([out])).toString('utf8')).value as unknown[];
      const got = written[0] as Record<string, unknown>;
      assert.deepEqual(got.memory, { ...want.candidate.memory, [KEY]: tag }, `${label}: memory`);
      assert.deepEqual(got.internal_steps, want.candidate.internal_steps, `${label}: internal_steps`);
      assert.deepEqual(out.output, want.candidate.output, `${label}: output, defaults filled on read`);
      assert.deepEqual(out.error, want.candidate.error, `${label}: error, defaults filled on read`);
      const { index } = slot.candidate;
      const bytes = joinBody(answerBody([out])).toString('utf8');
      for (const span of [index.internalSteps, index.output, index.error]) {
        if (span !== undefined) assert.ok(bytes.includes(buf.toString('utf8', span.start, span.end)), `${label}: exact bytes`);
      }
      if (index.memory.count > 0 && index.memory.tags.length === 0) {
        assert.ok(bytes.includes(buf.toString('utf8', index.memory.start, index.memory.lastValueEnd)), `${label}: memory bytes exact`);
      }
    }),
  );
  return 'slots';
}

test(`generated answers get the oracle's slots, reasons and exact bytes (seed ${SEED}, ${CASES} cases)`, () => {
  const g = new Gen(SEED);
  const counts = { whole: 0, slots: 0 };
  for (let n = 0; n < CASES; n++) {
    const cands: string[] = [];
    for (const id of ['1', '2']) for (let c = 0; c < 2; c++) if (!g.chance(0.1)) cands.push(candidate(g, g.chance(0.03) ? 'other' : 'r1', id, c));
    if (g.chance(0.1)) cands.push(candidate(g, 'r1', '1', 0));
    if (g.chance(0.05)) cands.push(g.pick(['1', '"x"', '[]', 'null']));
    if (g.chance(0.5)) cands.reverse();
    let text = `${g.ws()}[${cands.join(',')}]${g.ws()}`;
    if (g.chance(0.03)) text = text.slice(0, -1 - g.int(3));
    if (g.chance(0.02)) text = text.replace('"memory":{', '"memory":{"n":1e999,');
    counts[check(text, `seed ${SEED} case ${n}`)]++;
  }
  assert.ok(counts.slots > CASES / 2, `most answers are placed (${JSON.stringify(counts)})`);
});

/** The one candidate of a one-input answer `text`, read by the indexer and re-addressed with `tag`. */
function writtenCandidate(text: string, tag: { backend: string; route: string }): AgentOutput {
  const buf = Buffer.from(text);
  const idx = indexAgentResponse(buf, DEPTH, KEY);
  assert.ok(idx.ok);
  const check = checkIndexedResponse(buf, idx.elements, { requestId: 'r1', inputs: [{ id: 1, count: 1 }] });
  assert.ok(check.ok);
  const slot = check.slots[0]![0]!;
  assert.ok(slot.ok);
  return new CandidateWriter('r1', KEY).fromIndexed('r1', inputOf('1'), 0, slot.candidate, tag);
}

test('memory with integer-like keys keeps its order and every number as the backend wrote them', () => {
  const text = '[{"request_id":"r1","source_id":1,"candidate_index":0,"status":"completed","memory":{"b":1, "10":[1.0,-0,12345678901234567890],"2":"\\u00e9"},"output":{"say":"x"}}]';
  const out = writtenCandidate(text, { backend: 'a', route: 'default' });
  assert.equal(
    joinBody(answerBody([out])).toString('utf8'),
    '[{"request_id":"r1","source_id":1,"candidate_index":0,"status":"completed","memory":{"b":1, "10":[1.0,-0,12345678901234567890],"2":"\\u00e9","_gw":{"backend":"a","route":"default"}},"internal_steps":[],"output":{"say":"x"},"error":null}]',
  );
});

test("a backend's own memory tag is replaced where it stands, a repeated one cut", () => {
  const text = `[{"request_id":"r1","source_id":1,"candidate_index":0,"status":"error","error":{"code":"c","message":"m"},"memory":{"a":1,"${KEY}":{"backend":"old"},"b":2,"${KEY}":3}}]`;
  const out = writtenCandidate(text, { backend: 'a', route: 'default' });
  const bytes = joinBody(answerBody([out])).toString('utf8');
  assert.ok(bytes.includes(`"memory":{"a":1,"${KEY}":{"backend":"a","route":"default"},"b":2}`), bytes);
});

test('a candidate written from bytes reads as a plain output, and a renumbered copy of it is written from its fields', () => {
  const text = '[{"request_id":"r1","source_id":1,"candidate_index":0,"status":"completed","memory":{"b":1,"a":[2]},"internal_steps":[{"k":1}],"output":{"say":"x"}}]';
  const tag = { backend: 'a', route: 'default' };
  const out = writtenCandidate(text, tag);
  // The four protocol fields are its own; the decoded ones are its class's getters, which JSON.stringify sees too.
  assert.equal(JSON.stringify(Object.keys(out)), '["request_id","source_id","candidate_index","status"]');
  assert.equal(
    JSON.stringify(Object.keys(JSON.parse(JSON.stringify(out)) as object)),
    '["request_id","source_id","candidate_index","status","memory","internal_steps","output","error"]',
  );
  assert.deepEqual(out.memory, { b: 1, a: [2], [KEY]: tag });
  assert.equal(out.memory, out.memory, 'decoded once');
  assert.deepEqual(out.internal_steps, [{ k: 1 }]);
  const { request_id, source_id, status, memory, internal_steps, output, error } = out;
  const copy: AgentOutput = { request_id, source_id, candidate_index: 5, status, memory, internal_steps, output, error };
  const written = joinBody(answerBody([copy])).toString('utf8');
  assert.ok(written.includes('"candidate_index":5'), written);
  assert.ok(written.includes(`"memory":{"b":1,"a":[2],"${KEY}":{"backend":"a","route":"default"}}`), written);
});
