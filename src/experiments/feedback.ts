/**
 * Environment feedback (`instruction.type == "env"`, usually Python json.dumps output) into outcome counts:
 *   {"infos": "<robot>: <tool> succeed|failed with message: <text>\n...", "previous_tool_call": {...}}
 *   {"error": "<failure text>"}   or with a "failure_reason" key beside "infos"
 * Nothing guarantees it parses, so every input yields counts and none throws (`unparsed`, `other`).
 */

import { METRIC_OUTCOMES } from '../metrics.js';
import { isJsonObject, parseJsonOrUndefined } from '../protocol/schemas.js';

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

function isWordChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
}

const VERBS = ['succeeded', 'succeed', 'failed'] as const;

/**
 * `<robot>: <tool> succeed|succeeded|failed ...` (simulators differ on the tense); only the line start is read, so
 * a later "failed" cannot count twice. Not a regex: it backtracks quadratically on a long colon-free line.
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

/** Rejected before JSON.parse is tried: this runs on the request path. */
export function parseEnvFeedback(content: string): FeedbackCounts {
  const counts = emptyFeedback();
  const text = content.length > FEEDBACK_MAX_CHARS ? '' : content.trim();
  const value = text.startsWith('{') ? parseJsonOrUndefined(text) : undefined;
  if (!isJsonObject(value)) {
    counts.unparsed = 1;
    return counts;
  }
  const infos = value.infos;
  // A string is what json.dumps writes; a list of lines is tolerated in case an environment sends one.
  const lines = typeof infos === 'string' ? [infos] : Array.isArray(infos) ? infos.filter((x) => typeof x === 'string') : [];
  for (const text of lines) {
    for (const t of parseInfos(text)) {
      if (t.ok) counts.tool_succeeded++;
      else counts.tool_failed++;
    }
  }
  // The keys being there (even as null) means the shape was recognised; only a value is an outcome.
  const read = typeof infos === 'string' || Array.isArray(infos) || Object.hasOwn(value, 'error') || Object.hasOwn(value, 'failure_reason');
  if (present(value.error)) counts.env_error = 1;
  if (present(value.failure_reason)) counts.failure_reason = 1;
  if (!read) counts.unparsed = 1;
  else if (counts.tool_succeeded + counts.tool_failed + counts.env_error + counts.failure_reason === 0) counts.other = 1;
  return counts;
}
