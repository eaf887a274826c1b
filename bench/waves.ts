/**
 * The bench's driver for the memory scenarios, run in its own process: sends `inFlight` copies of one body at
 * once (each with a fresh request_id, `[<id>]` replaced), waits for every answer, and repeats `waves` times.
 * With a gated backend (backend-agent.ts `--gate`) every batch of a wave is in flight in the proxy at the same
 * time, which is what a peak-RSS target "with N batches in flight" needs; a closed loop (loadgen.ts) only
 * approaches it. Answers are streamed and counted, never joined, so an answer longer than a string can hold
 * (1 input x 600 KB memory x 1024 candidates) is checked too.
 *
 *   node dist/bench/waves.js '<json WaveSpec>'
 *
 * Stdout protocol, one line each: `START` before the first wave, `END` after the last (the parent reads process
 * CPU on these two lines), then `{"result": WaveResult}`.
 */
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { ID_PLACEHOLDER, type BenchRequest } from './lib/bodies.js';
import { checkAnswer } from './lib/check.js';
import { median } from './lib/stats.js';

export interface WaveSpec {
  url: string;
  bodyFile: string;
  inFlight: number;
  waves: number;
  timeoutS: number;
  /** Candidates a correct answer holds (sum of num_outputs). */
  expectCandidates: number;
  /** Parse and check the first answer in full (bench/lib/check.ts); only for answers a string can hold. */
  checkFirst: boolean;
  memoryKey: string;
}

export interface WaveResult {
  answers: number;
  /** Answers with status 200 and every expected candidate completed. */
  answered: number;
  /** Answers by HTTP status; `failed` when the request itself failed (connection closed, timeout). */
  statuses: Record<string, number>;
  completedCandidates: number;
  errorCandidates: number;
  /** Response bytes, all answers. */
  bytes: number;
  /** Response bytes of the largest answer. */
  maxAnswerBytes: number;
  /** Wall seconds of each wave. */
  waveS: number[];
  medianWaveS: number;
  /** The first few problems seen. */
  problems: string[];
  check?: { ok: boolean; problems: string[]; tags: Record<string, number> };
}

const COMPLETED = Buffer.from('"status":"completed"');
const ERROR = Buffer.from('"status":"error"');

/** Occurrences of `token` in `buf`; with `across`, only those that start before it and end after it. */
function count(buf: Buffer, token: Buffer, across?: number): number {
  let n = 0;
  let i = buf.indexOf(token);
  while (i !== -1) {
    if (across === undefined || (i < across && i + token.length > across)) n++;
    i = buf.indexOf(token, i + 1);
  }
  return n;
}

/**
 * Counts the candidates' statuses in a streamed answer. A `"` inside a JSON string is always escaped, so the
 * tokens match structural keys only. A token cut by a chunk boundary is found in the seam (the previous chunk's
 * tail + this chunk's head) and counted only there.
 */
class StatusCounter {
  completed = 0;
  errors = 0;
  private tail = Buffer.alloc(0);

  push(chunk: Buffer): void {
    const overlap = COMPLETED.length - 1;
    if (this.tail.length > 0) {
      const seam = Buffer.concat([this.tail, chunk.subarray(0, overlap)]);
      // Only tokens that start in the tail and end in the chunk: the others are counted in one of the two.
      this.completed += count(seam, COMPLETED, this.tail.length);
      this.errors += count(seam, ERROR, this.tail.length);
    }
    this.completed += count(chunk, COMPLETED);
    this.errors += count(chunk, ERROR);
    this.tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - overlap)));
  }
}

interface One {
  status: number | 'failed';
  bytes: number;
  completed: number;
  errors: number;
  problem?: string;
  text?: string;
}

async function sendOne(spec: WaveSpec, head: Buffer, tail: Buffer, id: string, keepText: boolean): Promise<One> {
  const idBuf = Buffer.from(id);
  try {
    const r = await request(spec.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(head.length + idBuf.length + tail.length) },
      // The shared head and tail are sent as they are: no 2 MB copy per batch in the driver.
      body: Readable.from([head, idBuf, tail], { objectMode: false }),
      headersTimeout: spec.timeoutS * 1000,
      bodyTimeout: spec.timeoutS * 1000,
    });
    const counter = new StatusCounter();
    const kept: Buffer[] = [];
    let bytes = 0;
    // undici's body is a Readable of Buffers (its type says `any` chunks).
    for await (const c of r.body as AsyncIterable<Buffer>) {
      bytes += c.length;
      counter.push(c);
      if (keepText || (r.statusCode !== 200 && bytes <= 4096)) kept.push(c);
    }
    const text = kept.length > 0 ? Buffer.concat(kept).toString('utf8') : undefined;
    const one: One = { status: r.statusCode, bytes, completed: counter.completed, errors: counter.errors, text };
    if (r.statusCode !== 200) one.problem = `HTTP ${r.statusCode}: ${(text ?? '').slice(0, 300)}`;
    else if (counter.completed !== spec.expectCandidates) {
      one.problem = `${counter.completed} completed and ${counter.errors} error candidates, expected ${spec.expectCandidates} completed`;
    }
    return one;
  } catch (err) {
    return { status: 'failed', bytes: 0, completed: 0, errors: 0, problem: `request failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as WaveSpec;
  const text = readFileSync(spec.bodyFile, 'utf8');
  const at = text.indexOf(ID_PLACEHOLDER);
  if (at === -1 || text.indexOf(ID_PLACEHOLDER, at + 1) !== -1) throw new Error(`${spec.bodyFile} must hold ${ID_PLACEHOLDER} exactly once`);
  const head = Buffer.from(text.slice(0, at));
  const tail = Buffer.from(text.slice(at + ID_PLACEHOLDER.length));
  const nonce = Date.now().toString(36);
  const res: WaveResult = {
    answers: 0,
    answered: 0,
    statuses: {},
    completedCandidates: 0,
    errorCandidates: 0,
    bytes: 0,
    maxAnswerBytes: 0,
    waveS: [],
    medianWaveS: Number.NaN,
    problems: [],
  };
  process.stdout.write('START\n');
  for (let w = 0; w < spec.waves; w++) {
    const t0 = performance.now();
    const ids = Array.from({ length: spec.inFlight }, (_, i) => `${nonce}-w${w}-${i}`);
    const answers = await Promise.all(ids.map((id, i) => sendOne(spec, head, tail, id, spec.checkFirst && w === 0 && i === 0)));
    res.waveS.push((performance.now() - t0) / 1000);
    for (const [i, a] of answers.entries()) {
      res.answers++;
      res.statuses[a.status] = (res.statuses[a.status] ?? 0) + 1;
      res.completedCandidates += a.completed;
      res.errorCandidates += a.errors;
      res.bytes += a.bytes;
      res.maxAnswerBytes = Math.max(res.maxAnswerBytes, a.bytes);
      if (a.problem === undefined) res.answered++;
      else if (res.problems.length < 5) res.problems.push(`wave ${w + 1}, batch ${i + 1}: ${a.problem}`);
      if (spec.checkFirst && w === 0 && i === 0 && a.status === 200 && a.text !== undefined) {
        const req = JSON.parse(text.replace(ID_PLACEHOLDER, ids[0]!)) as BenchRequest;
        const c = checkAnswer(req, a.status, a.text, spec.memoryKey);
        res.check = { ok: c.ok, problems: c.problems, tags: c.tags };
      }
    }
  }
  process.stdout.write('END\n');
  res.medianWaveS = median(res.waveS);
  process.stdout.write(JSON.stringify({ result: res }) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`waves: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
