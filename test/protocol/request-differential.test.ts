/**
 * The byte indexer (src/protocol/request/read-request.ts) against the previous reader, parseAgentRequest (exact parse +
 * zod), as the oracle: seeded generated bodies, valid and broken, must get the same verdict and the same 422
 * detail, and a valid body's free-form values must be the exact bytes the generator wrote. Where the previous
 * reader is wrong by design (key order of integer-like keys, bodies that are not UTF-8), the intended
 * behaviour is asserted on its own, and the test's name says so.
 *
 * The seed is fixed so CI runs the same cases; `DIFF_SEED=<n>` runs others, `DIFF_CASES=<n>` more of them. A
 * failure names its seed and case number, and the case is reproduced by running with that seed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import { memoryTagValue, memoryWithoutTag, stripMemoryKey } from '../../src/protocol/memory-tag.js';
import { readAgentRequest } from '../../src/protocol/request/read-request.js';
import { parseAgentRequest } from '../../src/protocol/request.js';
import { subRequestBody } from '../../src/protocol/request/sub-request.js';
import type { AgentInput, JsonObject } from '../../src/protocol/types.js';
import { seededRandom } from '../../bench/lib/seeded-random.js';

const SEED = Number(process.env.DIFF_SEED ?? 20240611);
const CASES = Number(process.env.DIFF_CASES ?? 3000);
const MEMORY_KEY = '_gw';
const LIMITS = { maxOutputsPerInput: 8, maxJsonDepth: 24, memoryKey: MEMORY_KEY };


/** An object as members of JSON text, so that order, repeats and whitespace are the generator's to choose. */
type Members = [key: string, value: string][];

const WORDS = ['a', 'b', 'step', 'history', 'content', 'é', 'ключ', '10', '2', '0', '__proto__', 'constructor', '', 'x y'];
const STRING_PIECES = [
  'plain', ' ', 'é', '€', '😀', '\\n', '\\"', '\\\\', '\\/', '\\b\\f\\r\\t', '\\u00e9', '\\ud83d\\ude00', '\\ud800', '\\uDFFF',
  '{\\"json\\": [1, 2]}', 'x'.repeat(40),
];
const NUMBERS = [
  '0', '-0', '1', '-7', '1.0', '-0.0', '1e5', '1E-7', '2.5e+3', '0.000001', '3.14', '12345678901234567890',
  '9007199254740993', '1.7976931348623157e308', '123456789012345678901234567890.5',
];

class Gen {
  readonly r: () => number;
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
    return xs[this.int(xs.length)]!; // int(n) < n
  }
  ws(): string {
    return this.chance(0.8) ? '' : this.pick([' ', '  ', '\n', '\n  ', '\t', '\r\n']);
  }
  string(): string {
    let s = '';
    const n = this.int(5);
    for (let i = 0; i < n; i++) s += this.pick(STRING_PIECES);
    return `"${s}"`;
  }
  key(): string {
    return this.chance(0.15) ? '"\\u0061"' : `"${this.pick(WORDS)}"`;
  }
  number(): string {
    if (this.chance(0.05)) return (this.chance(0.5) ? '-' : '') + '9'.repeat(300 + this.int(200));
    if (this.chance(0.5)) return String(this.int(100000) - 500);
    return this.pick(NUMBERS);
  }
  /** Any JSON value, nested at most `depth` more levels. */
  value(depth: number): string {
    const k = depth <= 0 ? this.int(4) : this.int(7);
    switch (k) {
      case 0:
        return this.string();
      case 1:
        return this.number();
      case 2:
        return this.pick(['true', 'false', 'null']);
      case 3:
        return this.string();
      case 4:
      case 5:
        return this.object(depth - 1);
      default: {
        const n = this.int(4);
        const items: string[] = [];
        for (let i = 0; i < n; i++) items.push(this.value(depth - 1));
        return `[${items.map((v) => this.ws() + v + this.ws()).join(',')}]`;
      }
    }
  }
  object(depth: number, extra: Members = []): string {
    const m: Members = [];
    const n = this.int(5);
    for (let i = 0; i < n; i++) m.push([this.key(), this.value(depth)]);
    for (const e of extra) m.splice(this.int(m.length + 1), 0, e);
    return this.members(m);
  }
  members(m: Members): string {
    return `{${this.ws()}${m.map(([k, v]) => `${k}${this.ws()}:${this.ws()}${v}`).join(`${this.ws()},${this.ws()}`)}${this.ws()}}`;
  }
  /** A value that is not of JSON type `not` ('string', 'int', 'object', 'array'). */
  wrong(not: string): string {
    const all: [string, string][] = [
      ['string', '"s"'], ['int', '3'], ['float', '1.0'], ['object', '{"a":1}'], ['array', '[{}]'], ['bool', 'true'], ['null', 'null'],
      ['intstring', '"1"'], ['exp', '1e0'],
    ];
    return this.pick(all.filter(([t]) => t !== not && !(not === 'array' && t === 'array'))).at(1) ?? 'null';
  }
}

/** One generated input: its members, and the text of each free-form value the input ends up with. */
interface GenInput {
  members: Members;
}

interface GenBody {
  top: Members;
  inputs: GenInput[];
}

function genInput(g: Gen, id: string): GenInput {
  const m: Members = [
    ['"id"', id],
    ['"instruction"', g.members(g.chance(0.5)
      ? [['"type"', g.pick(['"user"', '"env"', '"us\\u0065r"'])], ['"content"', g.string()]]
      : [['"content"', g.string()], ['"type"', g.pick(['"user"', '"env"'])]])],
  ];
  if (g.chance(0.6)) m.push(['"tools"', `[${Array.from({ length: g.int(3) }, () => g.object(2)).join(',')}]`]);
  if (g.chance(0.6)) m.push(['"attributes"', g.object(3)]);
  if (g.chance(0.85)) {
    const tag: Members = g.chance(0.4) ? [[`"${MEMORY_KEY}"`, g.pick(['{"backend":"a","route":"r"}', '1', '{"backend":"b","route":"r","arm":"x"}'])]] : [];
    m.push(['"memory"', g.object(g.chance(0.1) ? 18 : 4, tag)]);
  }
  if (g.chance(0.5)) m.push(['"num_outputs"', String(1 + g.int(LIMITS.maxOutputsPerInput))]);
  if (g.chance(0.5)) m.push(['"extra_keys"', g.object(2)]);
  // Protocol field order is the client's.
  for (let i = m.length - 1; i > 0; i--) {
    const j = g.int(i + 1);
    [m[i], m[j]] = [m[j]!, m[i]!]; // i, j < m.length
  }
  return { members: m };
}

function genBody(g: Gen): GenBody {
  const n = g.int(4);
  const ids = new Set<string>();
  const inputs: GenInput[] = [];
  while (inputs.length < n) {
    const id = g.chance(0.1) ? '1' + '0'.repeat(20 + g.int(400)) : String(g.int(50));
    if (ids.has(id)) continue;
    ids.add(id);
    inputs.push(genInput(g, g.chance(0.05) && id === '0' ? '-0' : id));
  }
  const top: Members = [['"request_id"', g.chance(0.9) ? `"req-${g.int(1e6)}"` : g.string().replace(/^""$/, '"r"')]];
  return { top, inputs };
}

function render(g: Gen, b: GenBody): string {
  const inputs = `[${b.inputs.map((i) => g.ws() + g.members(i.members)).join(',')}${g.ws()}]`;
  const top: Members = [...b.top];
  top.splice(g.chance(0.5) ? 0 : top.length, 0, ['"inputs"', inputs]);
  return g.ws() + g.members(top) + g.ws();
}

const PROTOCOL: Record<string, string> = {
  '"id"': 'int', '"instruction"': 'object', '"tools"': 'array', '"attributes"': 'object', '"memory"': 'object',
  '"num_outputs"': 'int', '"extra_keys"': 'object',
};

/** Structural mutations: each breaks (or, for shadowed repeats, deliberately keeps) one protocol rule. */
const MUTATIONS: ((g: Gen, b: GenBody) => void)[] = [
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    if (!inp) return;
    const k = g.int(inp.members.length);
    const [key] = inp.members[k]!; // k < length
    inp.members[k] = [key, g.wrong(PROTOCOL[key] ?? 'object')];
  },
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    (inp ? inp.members : b.top).push([g.pick(['"x"', '"__proto__"', '"Id"', '"memory "']), g.value(2)]);
  },
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    if (inp) inp.members = inp.members.filter(([k]) => k !== (g.chance(0.5) ? '"id"' : '"instruction"'));
    else b.top = [];
  },
  (g, b) => {
    // A repeated protocol field: an earlier one is shadowed (still valid), a later one wins.
    const inp = b.inputs[g.int(b.inputs.length)];
    const where = inp ? inp.members : b.top;
    const k = g.int(where.length);
    const m = where[k];
    if (!m) return;
    if (g.chance(0.5)) where.splice(k, 0, [m[0], g.wrong(PROTOCOL[m[0]] ?? 'string')]);
    else where.splice(k + 1, 0, [m[0], g.wrong(PROTOCOL[m[0]] ?? 'string')]);
  },
  (g, b) => {
    // A shadowed copy of a protocol object with a field pydantic forbids: the last copy wins (Python's json), so
    // valid; the previous indexer refused the body on the shadowed copy's unknown field.
    const inp = b.inputs[g.int(b.inputs.length)];
    if (inp && g.chance(0.6)) {
      const key = g.pick(['"instruction"', '"memory"']);
      const at = inp.members.findIndex(([k]) => k === key);
      const shadow = key === '"instruction"' ? '{"type":"user","content":"old","bogus":1}' : `{"${MEMORY_KEY}":{"backend":"old","route":"r"},"x":1}`;
      inp.members.splice(at === -1 ? 0 : at, 0, [key, shadow]);
    } else {
      b.top.splice(g.int(b.top.length + 1), 0, ['"inputs"', '[{"id":1,"instruction":{"type":"user","content":"a"},"bogus":true}]']);
    }
  },
  (g, b) => {
    if (b.inputs.length < 2) return;
    const a = b.inputs[0]!.members.find(([k]) => k === '"id"'); // length >= 2
    const inp = b.inputs[1]!;
    if (a) inp.members = inp.members.map(([k, v]) => [k, k === '"id"' ? (a[1] === '0' && g.chance(0.5) ? '-0' : a[1]) : v]);
  },
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    if (!inp) return;
    inp.members = inp.members.filter(([k]) => k !== '"num_outputs"');
    inp.members.push(['"num_outputs"', g.pick(['0', '-1', '-0', String(LIMITS.maxOutputsPerInput + 1), '1.0', '1e0', '"1"', 'true', '9'.repeat(40), '1e400'])]);
  },
  (g, b) => {
    b.top = [['"request_id"', g.pick(['""', '5', 'null', '["r"]', '1.0'])]];
  },
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    if (!inp) return;
    const bad = g.pick(['{"type":"User","content":""}', '{"type":"user"}', '{"type":"env","content":5}', '{"type":"user","content":"","x":1}', '[]', '"user"']);
    inp.members = inp.members.map(([k, v]) => [k, k === '"instruction"' ? bad : v]);
  },
  (g, b) => {
    // An overflowing number, or an integer too long for any double (valid), somewhere in a free-form value.
    const inp = b.inputs[g.int(b.inputs.length)];
    if (!inp) return;
    inp.members.push(['"attributes"', `{"n":[${g.pick(['1e400', '-1e400', '1' + '0'.repeat(400) + '.5', '1' + '0'.repeat(400)])}]}`]);
  },
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    if (!inp) return;
    const depth = LIMITS.maxJsonDepth - 4 + g.int(3); // memory is at depth 4: its values nest from 5
    inp.members = inp.members.filter(([k]) => k !== '"memory"');
    inp.members.push(['"memory"', `{"d":${'['.repeat(depth)}${']'.repeat(depth)}}`]);
  },
  (g, b) => {
    const inp = b.inputs[g.int(b.inputs.length)];
    if (!inp) return;
    inp.members.push(['"extra_keys"', `{"s":"${g.pick(['\\q1234', '\\U00e9', '\\x', '\\u12', '\\u12G4', '\\'])}"}`]);
  },
];

/** Textual mutations of the rendered body. */
const TEXT_MUTATIONS: ((g: Gen, t: string) => string)[] = [
  (g, t) => t.slice(0, g.int(t.length)),
  (g, t) => {
    const at = g.int(t.length);
    return t.slice(0, at) + String.fromCharCode(g.int(32)) + t.slice(at);
  },
  (g, t) => {
    const at = g.int(t.length);
    return t.slice(0, at) + g.pick(['"', '\\', ',', ':', '{', ']', ' ', 'a', '0', '-', '.', 'e']) + t.slice(at + (g.chance(0.5) ? 1 : 0));
  },
  (g, t) => t + g.pick([' x', ',', '{}', ' 1', '\u0000']),
  (g, t) => g.pick(['\ufeff', 'null', '[]', '"', '']) + (g.chance(0.5) ? '' : t),
];

type Read = ReturnType<typeof readAgentRequest>;

function check(text: string, ctx: string): 'valid' | 'invalid' {
  const buf = Buffer.from(text, 'utf8');
  const decoded = buf.toString('utf8');
  const r: Read = readAgentRequest(buf, LIMITS);
  const o = parseAgentRequest(decoded, LIMITS);
  if (!o.ok) {
    assert.equal(r.ok, false, `${ctx}: the indexer accepted a body the oracle refuses: ${JSON.stringify(o.detail).slice(0, 300)}`);
    if (!r.ok) {
      assert.equal(r.status, 422, ctx);
      if (r.status === 422) assert.deepEqual(r.detail, o.detail, `${ctx}: another 422 detail`);
    }
    return 'invalid';
  }
  if (!r.ok) {
    // The one refusal by design: an overflowing number the oracle never sees because a repeated key shadows it.
    const shadowed = r.status === 422 && r.detail?.[0]?.msg.includes('overflows to infinity') === true;
    assert.ok(shadowed, `${ctx}: the indexer refused a body the oracle accepts: ${JSON.stringify(r).slice(0, 300)}`);
    return 'invalid';
  }
  assert.equal(r.request.request_id, o.request.request_id, ctx);
  assert.equal(r.request.inputs.length, o.request.inputs.length, ctx);
  r.request.inputs.forEach((inp, i) => {
    const want = o.request.inputs[i]!; // same length (above)
    const raw = inp.raw ?? assert.fail(`${ctx}: input ${i} has no slices`);
    assert.deepEqual(inp.toJSON(), want, `${ctx}: input ${i} decodes differently`);
    // Exact bytes: the slices are the text of the last occurrence of each field in the body.
    for (const [field, slice] of [['tools', raw.tools], ['attributes', raw.attributes], ['memory', raw.memory], ['extra_keys', raw.extraKeys]] as const) {
      if (raw.index[field === 'extra_keys' ? 'extraKeys' : field] === undefined) continue;
      const re = new RegExp(`"${field}"\\s*:\\s*$`);
      assert.match(decoded.slice(0, buf.subarray(0, slice.start).toString('utf8').length), re, `${ctx}: ${field} slice does not follow its key`);
    }
    assert.deepEqual(
      JSON.parse(Buffer.concat(memoryWithoutTag(raw)).toString('utf8')),
      JSON.parse(stringifyExact(stripMemoryKey(want.memory, MEMORY_KEY))),
      `${ctx}: input ${i} memory without the tag`,
    );
  });
  // The sub-request the indexer writes reads back, through the oracle, as the request minus the memory tag.
  const rid = buf.subarray(r.index.requestIdSpan.start, r.index.requestIdSpan.end);
  const sub = subRequestBody(rid, r.request.inputs.map((inp) => ({ raw: inp.raw!, count: inp.num_outputs }))); // raw checked above
  const back = parseAgentRequest(sub.toString('utf8'), LIMITS);
  assert.ok(back.ok, `${ctx}: the sub-request is invalid: ${sub.toString('utf8').slice(0, 300)}`);
  if (back.ok) {
    const expected = o.request.inputs.map((inp: AgentInput) => ({ ...inp, memory: stripMemoryKey(inp.memory, MEMORY_KEY) as JsonObject }));
    assert.deepEqual(back.request.inputs, expected, `${ctx}: the sub-request's inputs`);
  }
  return 'valid';
}

test(`generated bodies get the oracle's verdict, 422 detail and exact bytes (seed ${SEED}, ${CASES} cases)`, () => {
  const g = new Gen(SEED);
  const counts = { valid: 0, invalid: 0 };
  for (let n = 0; n < CASES; n++) {
    const b = genBody(g);
    const kind = g.int(10);
    if (kind >= 4 && kind < 8) for (let k = 1 + g.int(2); k > 0; k--) g.pick(MUTATIONS)(g, b);
    let text = render(g, b);
    if (kind >= 8) text = g.pick(TEXT_MUTATIONS)(g, text);
    counts[check(text, `seed ${SEED} case ${n}`)]++;
  }
  // The generator must exercise both sides, or the test proves little.
  assert.ok(counts.valid > CASES / 4 && counts.invalid > CASES / 4, JSON.stringify(counts));
});

test('integer-like memory keys keep the order the client sent (the previous reader reordered them)', () => {
  const text = '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"memory":{"b":1,"10":2,"2":3,"_gw":{"backend":"x","route":"y"}}}]}';
  const r = readAgentRequest(Buffer.from(text), LIMITS);
  assert.ok(r.ok);
  const raw = r.request.inputs[0]?.raw ?? assert.fail('no slices');
  assert.equal(Buffer.concat(memoryWithoutTag(raw)).toString(), '{"b":1,"10":2,"2":3}');
  const o = parseAgentRequest(text, LIMITS);
  assert.ok(o.ok);
  assert.equal(stringifyExact(stripMemoryKey(o.request.inputs[0]!.memory, MEMORY_KEY)), '{"2":3,"10":2,"b":1}', 'the previous reader reorders');
});

test('integers of 309 and more digits are valid and kept digit for digit (the previous reader answered 422 finite_number)', () => {
  const big = '1' + '0'.repeat(400);
  const text = `{"request_id":"r","inputs":[{"id":${big},"instruction":{"type":"user","content":""},"memory":{"n":[${big},-${big}]}}]}`;
  const r = readAgentRequest(Buffer.from(text), LIMITS);
  assert.ok(r.ok);
  assert.equal(r.request.inputs[0]?.raw?.memory.bytes().toString(), `{"n":[${big},-${big}]}`);
  assert.equal(parseAgentRequest(text, LIMITS).ok, true);
});

test('a body that is not UTF-8 is a 400 wherever the bad bytes are (the previous reader rewrote them to U+FFFD)', () => {
  const g = new Gen(SEED + 1);
  for (let n = 0; n < 200; n++) {
    const text = render(g, genBody(g));
    const buf = Buffer.from(text);
    const at = g.int(buf.length + 1);
    const bad = Buffer.from(g.pick([[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]]));
    const body = Buffer.concat([buf.subarray(0, at), bad, buf.subarray(at)]);
    const r = readAgentRequest(body, LIMITS);
    assert.ok(!r.ok && r.status === 400, `seed ${SEED + 1} case ${n}`);
    if (!r.ok && r.status === 400) assert.ok(r.offset >= 0 && r.offset <= at + bad.length, `seed ${SEED + 1} case ${n}: offset ${r.offset}`);
  }
});

test('an overflowing number shadowed by a repeated key is refused (the previous reader never saw it)', () => {
  const text = '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"memory":{"a":1e400,"a":1}}]}';
  assert.equal(parseAgentRequest(text, LIMITS).ok, true);
  const r = readAgentRequest(Buffer.from(text), LIMITS);
  assert.ok(!r.ok && r.status === 422);
  if (!r.ok && r.status === 422) assert.match(r.detail?.[0]?.msg ?? '', /overflows to infinity/);
});

test('a repeated protocol key is the last copy, as Python json and pydantic read it: an unknown field in a shadowed copy is no error, and the forwarded bytes are the last copy', () => {
  const good = '[{"id":7,"instruction":{"type":"user","content":"new"},"memory":{"_gw":{"backend":"b","route":"r"},"k":2}}]';
  const bodies = [
    // python3 -c 'import json; print(json.loads(open(0).read()))' accepts each (last wins), and a strict
    // extra='forbid' pydantic model of AgentRequest validates the result.
    `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"a"},"bogus":true}],"inputs":${good}}`,
    `{"request_id":"r","inputs":[{"id":7,"instruction":{"type":"user","content":"old","x":1},"memory":{"_gw":{"backend":"a","route":"r"},"k":1},"instruction":{"type":"user","content":"new"},"memory":{"_gw":{"backend":"b","route":"r"},"k":2}}]}`,
  ];
  for (const text of bodies) {
    assert.equal(parseAgentRequest(text, LIMITS).ok, true, text);
    const r = readAgentRequest(Buffer.from(text), LIMITS);
    assert.ok(r.ok, text);
    if (!r.ok) continue;
    const inp = r.request.inputs[0]!;
    assert.equal(inp.id, 7);
    assert.deepEqual(inp.instruction, { type: 'user', content: 'new' });
    assert.deepEqual(memoryTagValue(inp.raw!), { backend: 'b', route: 'r' }); // raw is set by the indexer
    const sub = subRequestBody(Buffer.from('"r"'), [{ raw: inp.raw!, count: 1 }]).toString('utf8');
    assert.equal(sub, '{"request_id":"r","inputs":[{"id":7,"instruction":{"type":"user","content":"new"},"memory":{"k":2}}]}');
  }
  // A shadowed input's unknown field is no error, but the last copy's is.
  const bad = `{"request_id":"r","inputs":${good},"inputs":[{"id":1,"instruction":{"type":"user","content":"a"},"bogus":true}]}`;
  assert.equal(parseAgentRequest(bad, LIMITS).ok, false);
  assert.equal(readAgentRequest(Buffer.from(bad), LIMITS).ok, false);
});
