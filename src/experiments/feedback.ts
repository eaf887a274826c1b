/**
 * Environment feedback (`instruction.type == "env"`) into outcome counts, usually JSON written by Python json.dumps:
 *   {"infos": "<robot>: <tool> succeed|failed with message: <text>\n...", "previous_tool_call": {...}}
 *   {"error": "<failure text>"}   or with a "failure_reason" key beside "infos"
 * Nothing guarantees it parses, so every input yields counts and none throws: one tool_succeeded / tool_failed per
 * robot line of `infos`; env_error / failure_reason when that key holds a value; `unparsed` when the content is no
 * JSON object with any of those keys; `other` when read but with nothing to attribute ("The action has
 * completed."), which only the report shows (the metric's outcome set is fixed).
 */

import { METRIC_OUTCOMES } from '../metrics.js';
import { isJsonObject } from '../protocol/schemas.js';

export const FEEDBACK_OUTCOMES = [...METRIC_OUTCOMES, 'other'] as const;
export type FeedbackOutcome = (typeof FEEDBACK_OUTCOMES)[number];

export type FeedbackCounts = Record<FeedbackOutcome, number>;

export function emptyFeedback(): FeedbackCounts {
  return { tool_succeeded: 0, tool_failed: 0, env_error: 0, failure_reason: 0, unparsed: 0, other: 0 };
}

/** Longer content is `unparsed` unread: real contents are a few hundred bytes (docs/protocol-fidelity.md#limits). */
export const FEEDBACK_MAX_CHARS = 64 * 1024;

interface ToolLine {
  robot: string;
  tool: string;
  ok: boolean;
}

/** JavaScript's `\s`. */
function isSpace(c: number): boolean {
  return (
    c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/** `\w`. */
function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

const VERBS = ['succeeded', 'succeed', 'failed'] as const;

/**
 * One robot line, `<robot>: <tool> succeed|succeeded|failed ...` in [from, to), the verb a whole word (simulators
 * differ on the tense). Only the line start is read, so a message mentioning "failed" later cannot count twice.
 * Hand-written: the equivalent regex backtracks quadratically on a long line without a colon, and clients send it.
 */
function robotLine(text: string, from: number, to: number): ToolLine | undefined {
  let i = from;
  while (i < to && isSpace(text.charCodeAt(i))) i++;
  if (i >= to || text.charCodeAt(i) === 58) return undefined;
  // Not indexOf: it would run past the line's end, and over many colon-free lines that adds up quadratically.
  let colon = i;
  while (colon < to && text.charCodeAt(colon) !== 58) colon++;
  if (colon >= to) return undefined;
  let robotEnd = colon;
  while (robotEnd > i && isSpace(text.charCodeAt(robotEnd - 1))) robotEnd--;
  let j = colon + 1;
  while (j < to && isSpace(text.charCodeAt(j))) j++;
  const toolStart = j;
  while (j < to && !isSpace(text.charCodeAt(j))) j++;
  if (j === toolStart) return undefined;
  const toolEnd = j;
  while (j < to && isSpace(text.charCodeAt(j))) j++;
  if (j === toolEnd) return undefined;
  for (const verb of VERBS) {
    const end = j + verb.length;
    if (end <= to && text.startsWith(verb, j) && (end === to || !isWordChar(text.charCodeAt(end)))) {
      return { robot: text.slice(i, robotEnd), tool: text.slice(toolStart, toolEnd), ok: verb !== 'failed' };
    }
  }
  return undefined;
}

/** Lines split at `\n` or `\r\n`; lines that are not robot lines are skipped. */
export function parseInfos(infos: string): ToolLine[] {
  const out: ToolLine[] = [];
  let start = 0;
  while (start <= infos.length) {
    const nl = infos.indexOf('\n', start);
    const lineEnd = nl === -1 ? infos.length : nl;
    const to = lineEnd > start && infos.charCodeAt(lineEnd - 1) === 13 ? lineEnd - 1 : lineEnd;
    const t = robotLine(infos, start, to);
    if (t !== undefined) out.push(t);
    if (nl === -1) break;
    start = nl + 1;
  }
  return out;
}

/** A key the environment filled in: Python writes `null` (or an empty string) for "nothing to report". */
function present(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '' && v !== false;
}

/** Text that cannot be a JSON object is rejected before JSON.parse is tried: this runs on the request path. */
export function parseEnvFeedback(content: string): FeedbackCounts {
  const counts = emptyFeedback();
  if (content.length > FEEDBACK_MAX_CHARS) {
    counts.unparsed = 1;
    return counts;
  }
  const text = content.trim();
  let value: unknown;
  if (text.startsWith('{')) {
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
  }
  if (!isJsonObject(value)) {
    counts.unparsed = 1;
    return counts;
  }
  let read = false;
  const infos = value.infos;
  // A string is what json.dumps writes; a list of lines is tolerated in case an environment sends one.
  const lines = typeof infos === 'string' ? [infos] : Array.isArray(infos) ? infos.filter((x) => typeof x === 'string') : [];
  if (typeof infos === 'string' || Array.isArray(infos)) read = true;
  for (const text of lines) {
    for (const t of parseInfos(text)) {
      if (t.ok) counts.tool_succeeded++;
      else counts.tool_failed++;
    }
  }
  // The keys being there (even as null) means the shape was recognised; only a value is an outcome.
  if (Object.hasOwn(value, 'error')) read = true;
  if (Object.hasOwn(value, 'failure_reason')) read = true;
  if (present(value.error)) counts.env_error = 1;
  if (present(value.failure_reason)) counts.failure_reason = 1;
  if (!read) counts.unparsed = 1;
  else if (counts.tool_succeeded + counts.tool_failed + counts.env_error + counts.failure_reason === 0) counts.other = 1;
  return counts;
}
