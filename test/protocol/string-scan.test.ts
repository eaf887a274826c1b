/**
 * The WebAssembly string scan (src/protocol/json/string-scan.ts): its committed bytes are its source's, strings longer
 * than its 1 MiB window read the same as JSON.parse reads them, and without WebAssembly the gateway reads byte by
 * byte. Strings of every shape against a byte-by-byte reading: request-index.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { indexAgentRequest } from '../../src/protocol/request/request-index.js';
import { ESCAPE, createStringScan, newOwner } from '../../src/protocol/json/string-scan.js';

const LIMITS = { maxOutputsPerInput: 16, maxJsonDepth: 32, memoryKey: '_gw' };

test('string-scan-wasm.ts is what scripts/build-wasm.mjs assembles from string-scan.wat', () => {
  const r = spawnSync(process.execPath, ['scripts/build-wasm.mjs', '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('valid escapes are stepped over inside the scan; only one it cannot read comes back, at its backslash', () => {
  const scan = createStringScan();
  assert.ok(scan !== undefined);
  const text = Buffer.from('a\\"b\\\\c\\u00e9\\n\\/d" then \\q"', 'latin1');
  assert.equal(scan.end(newOwner(), text, 0), text.indexOf('" then'));
  assert.equal(scan.escaped, true);
  const bad = text.subarray(text.indexOf('" then') + 1);
  assert.equal(scan.end(newOwner(), bad, 0), ESCAPE);
  assert.equal(scan.at, bad.indexOf('\\q'));
});

test('strings of megabytes, escapes across the 1 MiB windows, are read as JSON.parse reads them', () => {
  const history = Array.from({ length: 40_000 }, (_, i) => `step ${i}: "said" \\ then\n${'é'.repeat(i % 7)}\t`).join('');
  const memory = { history, more: 'x'.repeat(1 << 20) };
  const body = JSON.stringify({ request_id: 'r', inputs: [{ id: 1, instruction: { type: 'user', content: history }, memory }] });
  assert.ok(body.length > 3 * (1 << 20));
  const buf = Buffer.from(body);
  const r = indexAgentRequest(buf, LIMITS);
  if (!r.ok) assert.fail(r.reject.message);
  const span = r.index.inputs[0]?.memory;
  assert.ok(span !== undefined);
  assert.deepEqual(JSON.parse(buf.toString('utf8', span.start, span.end)), memory);
  const cut = Buffer.from(body.slice(0, body.indexOf('"more"')).replace('step 39999', 'step \u0001'));
  const refused = indexAgentRequest(cut, LIMITS);
  assert.equal(refused.ok, false);
  if (!refused.ok) assert.equal(refused.reject.message, `control character in a string at byte ${cut.indexOf('step \u0001') + 5}`);
});

test('without WebAssembly (node --jitless) a batch is read byte by byte, the same', () => {
  const script = `
    import { stringScan } from './dist/src/protocol/json/string-scan.js';
    import { indexAgentRequest } from './dist/src/protocol/request/request-index.js';
    const body = JSON.stringify({ request_id: 'r', inputs: [{ id: 1, instruction: { type: 'user', content: 'a\\\\"b\\\\u00e9' } }] });
    const r = indexAgentRequest(Buffer.from(body), ${JSON.stringify(LIMITS)});
    console.log(JSON.stringify({ wasm: stringScan !== undefined, ok: r.ok, content: r.ok ? r.index.inputs[0].instruction.content : undefined }));
  `;
  const r = spawnSync(process.execPath, ['--jitless', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { wasm: false, ok: true, content: 'a\\"b\\u00e9' });
});
