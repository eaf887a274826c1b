/** A sub-request's body from slices of the client's, joined once (docs/protocol-fidelity.md#how-a-batch-is-read). */
import { memoryWithoutTag } from '../memory-tag.js';
import type { InputSlices } from './raw-json.js';
import type { Span } from './request-index.js';

interface SubRequestInput {
  raw: InputSlices;
  count: number;
}

const lit = (s: string): Buffer => Buffer.from(s, 'latin1');
const OPEN = lit('{"request_id":');
const INPUTS = lit(',"inputs":[');
const CLOSE = lit(']}');
const COMMA = lit(',');
const ID = lit('{"id":');
const INSTRUCTION = lit(',"instruction":');
const TOOLS = lit(',"tools":');
const ATTRIBUTES = lit(',"attributes":');
const MEMORY = lit(',"memory":');
const NUM_OUTPUTS = lit(',"num_outputs":');
const EXTRA_KEYS = lit(',"extra_keys":');
const END = lit('}');

function bytesOf(buf: Buffer, s: Span): Buffer {
  return buf.subarray(s.start, s.end);
}

/** Absent free-form fields stay absent (the contract's defaults apply). */
function inputPieces(raw: InputSlices, count: number, out: Buffer[]): void {
  const { buf, index } = raw;
  out.push(ID, bytesOf(buf, index.idSpan), INSTRUCTION, bytesOf(buf, index.instructionSpan));
  if (index.tools !== undefined) out.push(TOOLS, bytesOf(buf, index.tools));
  if (index.attributes !== undefined) out.push(ATTRIBUTES, bytesOf(buf, index.attributes));
  if (index.memory !== undefined) {
    out.push(MEMORY);
    for (const p of memoryWithoutTag(raw)) out.push(p);
  }
  if (index.numOutputsSpan !== undefined && count === index.numOutputs) out.push(NUM_OUTPUTS, bytesOf(buf, index.numOutputsSpan));
  else if (index.numOutputsSpan !== undefined || count !== 1) out.push(NUM_OUTPUTS, lit(String(count)));
  if (index.extraKeys !== undefined) out.push(EXTRA_KEYS, bytesOf(buf, index.extraKeys));
  out.push(END);
}

/** `requestId`: the token as the client wrote it, quotes included. */
export function subRequestBody(requestId: Buffer, inputs: readonly SubRequestInput[]): Buffer {
  const pieces: Buffer[] = [OPEN, requestId, INPUTS];
  inputs.forEach((inp, k) => {
    if (k > 0) pieces.push(COMMA);
    inputPieces(inp.raw, inp.count, pieces);
  });
  pieces.push(CLOSE);
  return Buffer.concat(pieces);
}
