/**
 * `magma-gateway outcomes import <BENCH results dir>` (docs/experiments.md#outcomes-from-bench): posts outcomes by
 * the hash of each episode's trace; ambiguous and unmatched episodes are counted, never guessed.
 */
import { join } from 'node:path';
import {
  adminHeaders, authHint, baseUrl, commandArgs, commandFailed, DEFAULT_ADMIN_URL, errorText, processIo, positiveOption, type CommandIo,
} from './args.js';
import { isJsonObject, parseJsonOrUndefined } from '../protocol/schemas.js';
import { episodeFiles, readResultFile, type ResultLimits } from './results-files.js';
import { traceHash } from '../experiments/trace-hash.js';
import { GatewayError } from '../errors.js';

/** Outcomes per POST: well under experiments.outcomes_max's default. */
const CHUNK = 1000;
const DEFAULT_MAX_EPISODE_MB = 64;
const DEFAULT_MAX_FILES = 50_000;

export const OUTCOMES_USAGE = `usage: magma-gateway outcomes import <BENCH results dir> [--url <admin-url>] [--token <token>] [--dry-run] [--json]
  Posts each BENCH episode's success to the gateway's experiment report, matched to its trajectory by the hash of
  the instructions the agent received (POST /gateway/experiments/outcomes on the admin listener).
  --url <url>            the gateway's admin listener, default ${DEFAULT_ADMIN_URL}
  --token <t>            admin bearer token (default: env GATEWAY_ADMIN_TOKEN)
  --dry-run              print per episode what would be posted (episode, trajectory matched, arm, success), post nothing
  --json                 print the summary as JSON
  --max-episode-mb <n>   skip episode files larger than this (default ${DEFAULT_MAX_EPISODE_MB}); links, FIFOs, devices are skipped too
  --max-files <n>        refuse a directory with more entries than this under scenarios/ (default ${DEFAULT_MAX_FILES})
  --timeout <s>          deadline of each request (default 60)
  exit code: 0 posted, 1 the results or the gateway could not be read, 2 usage error
`;

const FLAGS = {
  url: { type: 'string' },
  token: { type: 'string' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  'max-episode-mb': { type: 'string' },
  'max-files': { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface Episode {
  episode_id: string;
  success: boolean;
  trace_hash: string;
  file: string;
}

export interface ReadResult {
  agent: string | null;
  episodes: Episode[];
  skipped: { file: string; reason: string }[];
}

export function readEpisode(text: string): Omit<Episode, 'file'> | string {
  const v = parseJsonOrUndefined(text);
  if (v === undefined) return 'not JSON';
  if (!isJsonObject(v)) return 'not a JSON object';
  if (typeof v.episode_id !== 'string' || v.episode_id === '') return 'no episode_id';
  if (typeof v.success !== 'boolean') return 'no boolean success';
  if (!Array.isArray(v.trace)) return 'no trace list';
  const pairs: { role: string; content: string }[] = [];
  for (const entry of v.trace) {
    if (!isJsonObject(entry) || (entry.kind !== 'instruction' && entry.kind !== 'tool_feedback')) continue;
    const p = entry.payload;
    if (!isJsonObject(p) || typeof p.role !== 'string' || typeof p.content !== 'string') return 'a trace entry without payload.role and payload.content';
    pairs.push({ role: p.role, content: p.content });
  }
  return { episode_id: v.episode_id, success: v.success, trace_hash: traceHash(pairs) };
}

/** Deduplicated by episode_id: the final place wins over `.partial/`. */
export function readResults(dir: string, limits: ResultLimits): ReadResult {
  const runFile = join(dir, 'run.json');
  const runRead = readResultFile(runFile, limits.maxFileBytes);
  const notRun = (why: string): GatewayError => new GatewayError('GATEWAY_ERR_USAGE', `${runFile}: ${why} (is ${dir} a BENCH results directory?)`);
  if ('skip' in runRead) throw notRun(runRead.skip);
  const run = parseJsonOrUndefined(runRead.text);
  if (run === undefined) throw notRun('not JSON');
  const info = isJsonObject(run) && isJsonObject(run.agent) ? run.agent : {};
  const agent = typeof info.agent_id !== 'string' ? null : typeof info.agent_version === 'string' ? `${info.agent_id} ${info.agent_version}` : info.agent_id;
  const byId = new Map<string, Episode>();
  const skipped: { file: string; reason: string }[] = [];
  for (const file of episodeFiles(dir, limits.maxFiles, skipped)) {
    const read = readResultFile(file, limits.maxFileBytes);
    const e = 'skip' in read ? read.skip : readEpisode(read.text);
    if (typeof e === 'string') skipped.push({ file, reason: e });
    else byId.set(e.episode_id, { ...e, file });
  }
  return { agent, episodes: [...byId.values()], skipped };
}

interface PostSummary {
  received: number;
  results: Record<string, number>;
  matches: { trajectory: string | null; arm: string | null; result: string }[];
}

async function post(endpoint: string, token: string | boolean | undefined, body: string, timeoutMs: number): Promise<PostSummary | { problem: string }> {
  const headers = adminHeaders(token, { accept: 'application/json', 'content-type': 'application/json' });
  let status: number;
  let text: string;
  try {
    const res = await fetch(endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
    status = res.status;
    text = await res.text();
  } catch (err) {
    return { problem: `cannot reach ${endpoint}: ${errorText(err)}` };
  }
  if (status < 200 || status >= 300) {
    return { problem: `${endpoint} answered HTTP ${status}${authHint(status)}: ${text.replace(/\s+/g, ' ').slice(0, 300)}` };
  }
  const v = parseJsonOrUndefined(text);
  if (!isJsonObject(v) || !isJsonObject(v.results)) return { problem: `${endpoint} did not answer an outcomes summary` };
  const results: Record<string, number> = {};
  for (const [k, n] of Object.entries(v.results)) if (typeof n === 'number') results[k] = n;
  const matches = (Array.isArray(v.dry_run) ? v.dry_run : []).map((m: unknown) => {
    const o = isJsonObject(m) ? m : {};
    return { trajectory: typeof o.trajectory === 'string' ? o.trajectory : null, arm: typeof o.arm === 'string' ? o.arm : null, result: typeof o.result === 'string' ? o.result : '?' };
  });
  return { received: typeof v.received === 'number' ? v.received : 0, results, matches };
}

export async function outcomesCommand(argv: string[], io: CommandIo = processIo): Promise<number> {
  const a = commandArgs(argv, FLAGS, 2, { name: 'outcomes', usage: OUTCOMES_USAGE, io }, ({ values, positionals }) => {
    if (positionals[0] !== 'import') throw new GatewayError('GATEWAY_ERR_USAGE', 'expected "outcomes import <BENCH results dir>"');
    const dir = positionals[1];
    if (dir === undefined) throw new GatewayError('GATEWAY_ERR_USAGE', 'missing the BENCH results directory');
    return {
      values,
      dir,
      base: baseUrl(typeof values.url === 'string' ? values.url : DEFAULT_ADMIN_URL, 'admin URL'),
      seconds: positiveOption(values.timeout, '--timeout', 60),
      maxMb: positiveOption(values['max-episode-mb'], '--max-episode-mb', DEFAULT_MAX_EPISODE_MB, 'MB'),
      maxFiles: positiveOption(values['max-files'], '--max-files', DEFAULT_MAX_FILES, 'files'),
    };
  });
  if ('exit' in a) return a.exit;
  const { values, dir, base, seconds, maxMb, maxFiles } = a.args;
  let read: ReadResult;
  try {
    read = readResults(dir, { maxFileBytes: Math.floor(maxMb * 1024 * 1024), maxFiles: Math.floor(maxFiles) });
  } catch (err) {
    return commandFailed(io, 'outcomes', err instanceof Error ? err.message : String(err));
  }
  const totals: Record<string, number> = {};
  const dry = values['dry-run'] === true;
  // A dry run asks the gateway what each episode would match, and credits nothing (docs/experiments.md#outcomes-from-bench).
  const matches: (Episode & { trajectory: string | null; arm: string | null; result: string })[] = [];
  const endpoint = `${base}/gateway/experiments/outcomes`;
  for (let i = 0; i < read.episodes.length; i += CHUNK) {
    const chunk = read.episodes.slice(i, i + CHUNK);
    const outcomes = chunk.map((e) => ({ trace_hash: e.trace_hash, episode: e.episode_id, success: e.success }));
    const s = await post(endpoint, values.token, JSON.stringify(dry ? { outcomes, dry_run: true } : { outcomes }), Math.ceil(seconds * 1000));
    if ('problem' in s) return commandFailed(io, 'outcomes', `${s.problem}${i > 0 && !dry ? ` (the first ${i} episodes were posted; posting again is safe)` : ''}`);
    for (const [k, n] of Object.entries(s.results)) totals[k] = (totals[k] ?? 0) + n;
    chunk.forEach((e, k) => {
      const m = s.matches[k];
      matches.push({ ...e, trajectory: m?.trajectory ?? null, arm: m?.arm ?? null, result: m?.result ?? '?' });
    });
  }
  const summary = {
    agent: read.agent, episodes: read.episodes.length, skipped: read.skipped, posted: dry ? 0 : read.episodes.length, results: totals,
    ...(dry ? { would_post: matches.map((m) => ({ episode: m.episode_id, trajectory: m.trajectory, arm: m.arm, success: m.success, result: m.result })) } : {}),
  };
  if (values.json === true) io.out(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    const lines = [`${read.episodes.length} episodes read from ${dir}${read.agent === null ? '' : ` (agent ${read.agent})`}, ${read.skipped.length} files skipped`];
    for (const s of read.skipped.slice(0, 10)) lines.push(`  skipped ${s.file}: ${s.reason}`);
    if (dry) {
      lines.push('dry run: nothing posted; per episode: episode, trajectory matched, arm, success, what posting would do');
      for (const m of matches) lines.push(`  ${m.episode_id}  ${m.trajectory ?? '-'}  ${m.arm ?? '-'}  ${m.success ? 'success' : 'failure'}  ${m.result}`);
    }
    lines.push(`${dry ? 'would be: ' : ''}${Object.entries(totals).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ') || 'nothing'}`);
    lines.push('accepted = credited to its trajectory; replay = its trajectory was credited already (a rerun answered from the cache);');
    lines.push('duplicate = this episode was posted before; conflict = another outcome was posted for it; superseded = only a resumed');
    lines.push("episode's abandoned prefix has this trace; ambiguous = identical traces in several arms of one experiment, or in");
    lines.push('several routes; unmatched = no trajectory with that trace. Only accepted credits anything: importing again never');
    lines.push('counts twice. After a reset, a rerun of the same seeds credits the new experiment: import each run before the next reset.');
    io.out(`${lines.join('\n')}\n`);
  }
  return 0;
}
