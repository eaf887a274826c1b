/**
 * Reading environment feedback (`instruction.type == "env"`, docs/agent-contract.md "Environment feedback")
 * into outcome counts, so the gateway can attribute execution results to the backend whose decision the
 * environment is reporting on (docs/gateway-behaviour.md, "Execution feedback and the experiment report").
 *
 * The content is usually a string of JSON written by Python `json.dumps`:
 *   {"infos": "<robot>: <tool> succeed|failed with message: <text>\n...", "previous_tool_call": {...}}
 *   {"infos": "The action has completed.", "previous_tool_call": {...}}
 *   {"error": "<failure text>"}
 *   {"infos": "table_robot: place failed with message: ...", "previous_tool_call": {...}, "failure_reason": "..."}
 * but nothing guarantees it parses, so every input yields counts and none throws.
 *
 * Outcomes, per env input:
 * - one `tool_succeeded` / `tool_failed` per robot line of `infos` (a multi-robot step reports several tools);
 * - `env_error` when an `error` key holds a value, `failure_reason` when a `failure_reason` key does (both are
 *   counted alongside the robot lines: a failed place with a reason is one tool_failed and one failure_reason);
 * - `unparsed` when the content is not JSON, not a JSON object, or an object with none of those keys: the
 *   environment said something the gateway cannot read, which an operator wants to see grow;
 * - `other` when the object was read but carries no robot line, error or reason, e.g. "The action has
 *   completed." (no tool outcome to attribute). `other` is not a metric outcome: the metric's outcome set is
 *   fixed (tool_succeeded|tool_failed|env_error|failure_reason|unparsed), so it only shows in the report.
 */

/** The outcomes of `magma_gateway_execution_feedback_total`, in the order the report lists them. */
export const METRIC_OUTCOMES = ['tool_succeeded', 'tool_failed', 'env_error', 'failure_reason', 'unparsed'] as const;
export type MetricOutcome = (typeof METRIC_OUTCOMES)[number];

/** Every outcome the report counts: the metric's plus `other` (read, but nothing to attribute). */
export const FEEDBACK_OUTCOMES = [...METRIC_OUTCOMES, 'other'] as const;
export type FeedbackOutcome = (typeof FEEDBACK_OUTCOMES)[number];

export type FeedbackCounts = Record<FeedbackOutcome, number>;

export function emptyFeedback(): FeedbackCounts {
  return { tool_succeeded: 0, tool_failed: 0, env_error: 0, failure_reason: 0, unparsed: 0, other: 0 };
}

/**
 * One robot line: `<robot>: <tool> succeed|failed with message: <text>`. The robot is everything before the
 * first colon (robot names hold no colon); `succeeded` is accepted too since simulators differ on the tense.
 * Anchored at the line start so a message mentioning "failed" later in the line cannot count twice.
 */
const ROBOT_LINE = /^\s*([^:\s][^:]*?)\s*:\s*(\S+)\s+(succeed|succeeded|failed)\b/;

export interface ToolLine {
  robot: string;
  tool: string;
  ok: boolean;
}

/** The robot lines of an `infos` text; lines that are not one (free text) are skipped. */
export function parseInfos(infos: string): ToolLine[] {
  const out: ToolLine[] = [];
  for (const line of infos.split(/\r?\n/)) {
    const m = ROBOT_LINE.exec(line);
    if (m !== null) out.push({ robot: m[1]!, tool: m[2]!, ok: m[3] !== 'failed' });
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A key the environment filled in: Python writes `null` (or an empty string) for "nothing to report". */
function present(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '' && v !== false;
}

/**
 * The outcome counts of one env input's content. Cheap enough for the request path: contents are a few hundred
 * bytes, and text that cannot be a JSON object is rejected before JSON.parse is tried.
 */
export function parseEnvFeedback(content: string): FeedbackCounts {
  const counts = emptyFeedback();
  const text = content.trim();
  let value: unknown;
  if (text.startsWith('{')) {
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
  }
  if (!isObject(value)) {
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
