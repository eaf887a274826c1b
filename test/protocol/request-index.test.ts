import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexAgentRequest, type IndexLimits, type RequestIndex, type Span } from '../../src/protocol/request/request-index.js';
import { IndexReject, JsonScanner } from '../../src/protocol/json/json-index.js';
import { createStringScan, stringScan } from '../../src/protocol/json/string-scan.js';
import { seededRandom } from '../../bench/lib/seeded-random.js';

const LIMITS: IndexLimits = { maxOutputsPerInput: 16, maxJsonDepth: 32, memoryKey: '_gw' };

function index(text: string, limits: IndexLimits = LIMITS): RequestIndex {
  const r = indexAgentRequest(Buffer.from(text), limits);
  if (!r.ok) assert.fail(`refused: ${r.reject.message}`);
  return r.index;
}

function refused(text: string, limits: IndexLimits = LIMITS): string {
  const r = indexAgentRequest(Buffer.from(text), limits);
  assert.equal(r.ok, false, `expected a refusal of ${text}`);
  return r.ok ? '' : r.reject.reason;
}

const text = (ix: RequestIndex, s: Span | undefined): string | undefined =>
  s === undefined ? undefined : ix.buf.toString('utf8', s.start, s.end);

test('every field of an input is indexed at the exact bytes the client sent', () => {
  const body =
    '{ "request_id" : "r\\u0031", "inputs" : [ {"id": 12345678901234567890, "instruction": {"type":"env","content":"é\\n"},' +
    ' "tools": [ {"name":"pick"} ], "attributes": {"scenario": "k"}, "memory": {"b":1,"10":2, "2": [1.0, -0]},' +
    ' "num_outputs": 3, "extra_keys": {"x": null}} ] }';
  const ix = index(body);
  assert.equal(ix.requestId, 'r1');
  assert.equal(text(ix, ix.requestIdSpan), '"r\\u0031"');
  const [inp] = ix.inputs;
  assert.ok(inp);
  assert.equal(text(ix, inp.idSpan), '12345678901234567890');
  assert.equal(inp.idKey, '12345678901234567890');
  assert.deepEqual(inp.instruction, { type: 'env', content: 'é\n' });
  assert.equal(text(ix, inp.tools), '[ {"name":"pick"} ]');
  assert.equal(text(ix, inp.attributes), '{"scenario": "k"}');
  assert.equal(text(ix, inp.memory), '{"b":1,"10":2, "2": [1.0, -0]}');
  assert.equal(text(ix, inp.extraKeys), '{"x": null}');
  assert.equal(inp.numOutputs, 3);
  assert.equal(text(ix, inp.span)?.startsWith('{"id"'), true);
  assert.equal(text(ix, inp.span)?.endsWith('{"x": null}}'), true);
  const m = inp.memoryLayout;
  assert.ok(m);
  assert.equal(m.count, 3);
  assert.equal(ix.buf.toString('utf8', m.firstKeyStart, m.lastValueEnd), '"b":1,"10":2, "2": [1.0, -0]');
  assert.deepEqual(m.tags, []);
});

test('absent free-form fields and num_outputs are undefined spans with the contract defaults', () => {
  const ix = index('{"request_id":"r","inputs":[{"id":-0,"instruction":{"type":"user","content":""}}]}');
  const [inp] = ix.inputs;
  assert.ok(inp);
  assert.equal(inp.tools ?? inp.attributes ?? inp.memory ?? inp.extraKeys ?? inp.numOutputsSpan, undefined);
  assert.equal(inp.numOutputs, 1);
  assert.equal(inp.idKey, '0');
});

test('the memory tag members are found by key, escaped or not, and only at the top level of memory', () => {
  const ix = index(
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},' +
      '"memory":{"a":{"_gw":1},"_gw":{"backend":"x","route":"y"},"b":2,"\\u005fgw":3}}]}',
  );
  const [inp] = ix.inputs;
  assert.ok(inp);
  const tags = inp.memoryLayout?.tags ?? [];
  assert.deepEqual(
    tags.map((t) => [ix.buf.toString('utf8', t.keyStart, t.valueEnd), ix.buf.toString('utf8', t.valueStart, t.valueEnd)]),
    [['"_gw":{"backend":"x","route":"y"}', '{"backend":"x","route":"y"}'], ['"\\u005fgw":3', '3']],
  );
  assert.equal(inp.memoryLayout?.count, 4, 'members are counted, not kept');
});

test('a protocol field given twice counts once, the last one, as JSON.parse keeps it', () => {
  const ix = index('{"request_id":5,"inputs":[1],"request_id":"r","inputs":[]}');
  assert.equal(ix.requestId, 'r');
  assert.equal(ix.inputs.length, 0);
  assert.match(refused('{"request_id":"r","request_id":5,"inputs":[]}'), /request_id/);
});

test('an integer of any length is valid; a number that overflows to infinity is refused', () => {
  const big = '9'.repeat(400);
  const ix = index(`{"request_id":"r","inputs":[{"id":${big},"instruction":{"type":"user","content":""},"memory":{"n":-${big}}}]}`);
  assert.equal(ix.inputs[0]?.idKey, big);
  assert.match(
    refused('{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"memory":{"n":[1e400]}}]}'),
    /infinity/,
  );
  assert.match(refused(`{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"memory":{"n":${big}.5}}]}`), /infinity/);
});

test('nesting up to server.max_json_depth is valid and one level more is refused', () => {
  const deep = (levels: number): string =>
    `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"memory":{"d":${'['.repeat(levels)}${']'.repeat(levels)}}}]}`;
  // body 1, inputs 2, the input 3, memory 4: memory.d's arrays start at depth 5.
  index(deep(LIMITS.maxJsonDepth - 4));
  assert.match(refused(deep(LIMITS.maxJsonDepth - 3)), /deep/);
  assert.match(refused('{"request_id":"r","inputs":[]}', { ...LIMITS, maxJsonDepth: 1 }), /deep/);
});

test('strings are refused with a control character, a bad escape or no end; lone surrogate escapes are valid', () => {
  const rq = (content: string): string => `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"${content}"}}]}`;
  index(rq('\\ud800 \\uDFFF \\" \\\\ \\/ \\b \\f \\n \\r \\t'));
  assert.match(refused(rq('a\u0001b')), /control/);
  assert.match(refused(rq('a\\xb')), /escape/);
  assert.match(refused(rq('a\\u12g4')), /escape/);
  assert.match(refused('{"request_id":"r'), /unterminated/);
  // Long strings go through the word-at-a-time path: a control character deep inside one is still seen.
  const long = 'x'.repeat(1001);
  index(rq(long));
  assert.match(refused(rq(`${long}\u001f${long}`)), /control/);
  assert.match(refused(rq(`${long}\\q${long}`)), /escape/);
});

test('a string that runs into the last bytes of a body is refused for what is there, not taken for unterminated', () => {
  // The SIMD scan reads sixteen bytes at a time and stops at the zeros after the bytes: a control character or a bad
  // escape in the last bytes must still be named as such.
  for (let pad = 0; pad < 8; pad++) {
    for (let shift = 0; shift < 4; shift++) {
      for (const [tail, reason] of [['\u0001', /control/], ['\\q', /escape/], ['', /unterminated/]] as const) {
        const body = `{"request_id":"${'x'.repeat(40 + pad)}${tail}`;
        const backing = Buffer.alloc(body.length + 8, 0x20);
        backing.write(body, shift);
        const r = indexAgentRequest(backing.subarray(shift, shift + body.length), LIMITS);
        assert.equal(r.ok, false, `pad ${pad} shift ${shift} tail ${JSON.stringify(tail)}`);
        if (!r.ok) assert.match(r.reject.reason, reason, `pad ${pad} shift ${shift} tail ${JSON.stringify(tail)}`);
      }
    }
  }
});

/** RFC 8259's string rule read a byte at a time: the offset past the closing quote, or where and why it fails. */
function stringByBytes(b: Buffer, open: number): number | { at: number; reason: string } {
  for (let p = open + 1; p < b.length; p++) {
    const c = b[p] ?? 0;
    if (c === 0x22) return p + 1;
    if (c < 0x20) return { at: p, reason: 'control character in a string' };
    if (c !== 0x5c) continue;
    if (p + 1 >= b.length) break;
    const e = String.fromCharCode(b[p + 1] ?? 0);
    if ('"\\/bfnrt'.includes(e)) p++;
    else if (e !== 'u') return { at: p, reason: 'invalid escape' };
    else if (/^[0-9a-fA-F]{4}$/.test(b.toString('latin1', p + 2, Math.min(b.length, p + 6)))) p += 5;
    else return { at: p, reason: 'invalid \\u escape' };
  }
  return { at: b.length, reason: 'unterminated string' };
}

test('every string ends, or is refused at the byte and for the reason, of a byte-by-byte reading, whatever its length, escapes, alignment and scan', () => {
  assert.ok(stringScan !== undefined, 'WebAssembly is there: strings are read sixteen bytes at a time');
  // The scan as the gateway runs it (1 MiB windows), with windows small enough that strings and escapes cross their
  // edges all the time, and the byte-by-byte reading used without WebAssembly.
  const scans = [['default', stringScan], ['17-byte windows', createStringScan(17)], ['64-byte windows', createStringScan(64)], ['bytes', undefined]] as const;
  const random = seededRandom(20261205);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  // Plain text with escapes, control characters and bad escapes now and then or every few bytes (a serialized
  // memory's history), at every alignment and in the body's last bytes.
  const rare = ['\\n', '\\"', '\\\\', '\\u00e9', '\\q', '\\u12g4', '\u0001', '\u001f', 'é', '€'];
  for (let c = 0; c < 3000; c++) {
    const density = pick([0.01, 0.01, 0.2]);
    const strings = Array.from({ length: 1 + Math.floor(random() * 6) }, () => {
      const len = pick([0, 3, 15, 16, 17, 40, 63, 64, 65, 100, 300, 2000]);
      let t = '';
      while (t.length < len) t += random() < density ? pick(rare) : 'abcdefgh'.charAt(Math.floor(random() * 8));
      return t;
    });
    const unterminated = random() < 0.1;
    const text = `"${strings.join('","')}${unterminated ? '' : '"'}`;
    const shift = Math.floor(random() * 4);
    const backing = Buffer.alloc(text.length * 3 + 8, 0x22);
    const n = backing.write(text, shift);
    const buf = backing.subarray(shift, shift + n);
    for (const [name, scan] of scans) {
      const scanner = new JsonScanner(buf, 8, scan);
      for (let open = 0; open < buf.length; ) {
        const want = stringByBytes(buf, open);
        let got: number | { at: number; reason: string };
        try {
          got = scanner.string(open);
        } catch (err) {
          if (!(err instanceof IndexReject)) throw err;
          got = { at: err.at, reason: err.reason };
        }
        const where = `case ${c} ${name} shift ${shift} string at ${open}: ${JSON.stringify(text.slice(open, open + 80))}`;
        assert.deepEqual(got, want, where);
        if (typeof got !== 'number') break;
        assert.equal(scanner.escaped, buf.subarray(open + 1, got - 1).includes(0x5c), `escaped, ${where}`);
        open = got + 1; // past the comma
      }
    }
  }
});

test('a body at any byte offset of its ArrayBuffer is scanned the same', () => {
  const body = `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"${'y'.repeat(301)}\\"z"}}]}`;
  for (let shift = 0; shift < 4; shift++) {
    const backing = Buffer.alloc(body.length + 8, 0x22);
    backing.write(body, shift);
    const r = indexAgentRequest(backing.subarray(shift, shift + body.length), LIMITS);
    assert.ok(r.ok, `shift ${shift}`);
    assert.equal(r.index.inputs[0]?.instruction.content, `${'y'.repeat(301)}"z`);
  }
});

test('unknown fields, wrong types and broken grammar are refused at every protocol level', () => {
  const i = (extra: string): string => `{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""}${extra}}]}`;
  for (const bad of [
    '{"request_id":"r","inputs":[],"x":1}',
    i(',"x":1'),
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":"","x":1}}]}',
    '{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"User","content":""}}]}',
    '{"request_id":"r","inputs":[{"id":1.0,"instruction":{"type":"user","content":""}}]}',
    '{"request_id":"r","inputs":[{"instruction":{"type":"user","content":""}}]}',
    i(',"tools":[1]'),
    i(',"tools":{}'),
    i(',"memory":[]'),
    i(',"attributes":null'),
    i(',"num_outputs":0'),
    i(',"num_outputs":17'),
    i(',"num_outputs":true'),
    '{"request_id":"","inputs":[]}',
    '{"inputs":[]}',
    '[]',
    '{"request_id":"r","inputs":[]} 1',
    '{"request_id":"r","inputs":[],}',
    '{"request_id":"r","inputs":[01]}',
    i(',"memory":{"a":tru}'),
    i(',"memory":{"a":1.}'),
    i(',"memory":{"a":NaN}'),
    '',
  ]) {
    refused(bad);
  }
});

test('duplicate input ids are refused, -0 and 0 being the same id', () => {
  const two = (a: string, b: string): string =>
    `{"request_id":"r","inputs":[{"id":${a},"instruction":{"type":"user","content":""}},{"id":${b},"instruction":{"type":"user","content":""}}]}`;
  assert.match(refused(two('0', '-0')), /duplicate/);
  assert.match(refused(two('5', '5')), /duplicate/);
  assert.equal(index(two('5', '-5')).inputs.length, 2);
});

test('short texts are decoded exactly even when two of them share a slot of the decoded-text table', () => {
  // Two request_ids of two ASCII characters whose hashes land in the same slot (the table is direct-mapped),
  // found by trying every pair; then non-ASCII text of the same length, which the table never holds.
  const slotOf = (t: string): number => {
    let h = t.length;
    for (const c of Buffer.from(t, 'latin1')) h = (Math.imul(h, 31) + c) | 0;
    return h & 1023;
  };
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let a = 0x61; a <= 0x7a && pair === undefined; a++) {
    for (let b = 0x21; b <= 0x7e && pair === undefined; b++) {
      const t = String.fromCharCode(a, b);
      const other = seen.get(slotOf(t));
      if (other !== undefined && other !== t) pair = [other, t];
      else seen.set(slotOf(t), t);
    }
  }
  assert.ok(pair !== undefined, 'two texts sharing a slot');
  const body = (rid: string): string => `{"request_id":${JSON.stringify(rid)},"inputs":[]}`;
  for (const rid of [pair[0], pair[1], pair[0], 'é', 'ab', 'é', pair[1]]) assert.equal(index(body(rid)).requestId, rid);
});

test('a number is refused as infinite exactly when a double cannot hold it, decided without converting most of them', () => {
  // Magnitudes around the largest double (1.7976931348623157e308), leading zeros, zero significands and long
  // exponents; Number() is the reference for each.
  const cases = [
    '1e308', '1.7976931348623157e308', '1.7976931348623158e308', '1.7976931348623159e308', '1.8e308', '2e308',
    '9.9e307', '99.9e307', '0.00017976931348623159e312', '0.0e99999', '0e400', '000.5'.slice(2), '-1e309',
    '1e-400', '1.5e+308', '17976931348623158e292', '1' + '0'.repeat(308) + '.5', '1' + '0'.repeat(309) + '.5',
    '0.' + '0'.repeat(50) + '1e358', '0.' + '0'.repeat(50) + '1e359', '1e99999999999', '123.456e10',
  ];
  for (const n of cases) {
    const r = indexAgentRequest(Buffer.from(`{"request_id":"r","inputs":[{"id":1,"instruction":{"type":"user","content":""},"memory":{"n":${n}}}]}`), LIMITS);
    assert.equal(r.ok, Number.isFinite(Number(n)), n);
  }
});
