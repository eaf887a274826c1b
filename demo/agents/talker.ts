/**
 * The talker demo agent: always answers in words. A user message gets a `say` that quotes the instruction; an
 * environment message gets a comment on the feedback (success, failure or unparsed text).
 * Run: `node dist/demo/agents/talker.js --port 8101` (or PORT=8101).
 */
import type { AgentInput } from '../../src/protocol/types.js';
import { startAgentServer, type AgentServer, type DecideContext, type DecideResult } from './agent-server.js';
import { isMain, runAgentProcess } from './cli.js';
import { isJsonObject } from './protocol.js';

export const TALKER_ID = 'demo-talker';

function clip(s: string, n = 80): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/**
 * Comment on execution feedback; the payload is a convention, never guaranteed to parse (docs/protocol-fidelity.md#environment-feedback).
 */
function commentOnEnv(content: string): string {
  let payload: unknown;
  try {
    payload = JSON.parse(content);
  } catch {
    return `The environment said "${clip(content)}"; noted.`;
  }
  if (!isJsonObject(payload)) return `The environment said "${clip(content)}"; noted.`;
  if (typeof payload.error === 'string') return `That did not work: ${clip(payload.error)}`;
  if (typeof payload.infos === 'string') {
    const failed = /\bfailed\b/.test(payload.infos) || typeof payload.failure_reason === 'string';
    return failed ? `Something failed: ${clip(payload.infos)}` : `Good, that worked: ${clip(payload.infos)}`;
  }
  return 'The environment answered without details; noted.';
}

export function talkerDecide(input: AgentInput, ctx: DecideContext): DecideResult {
  const history = Array.isArray(input.memory.history) ? input.memory.history : [];
  const turn = Math.floor(history.length / 2) + 1;
  const text =
    input.instruction.type === 'env'
      ? commentOnEnv(input.instruction.content)
      : `You asked "${clip(input.instruction.content, 60)}"; let's talk it through.`;
  // Several candidates of one input should differ a little, like sampled answers would.
  // Marked up front so it stays visible when a table clips the text.
  const variant = ctx.candidateIndex > 0 ? ` v${ctx.candidateIndex}` : '';
  return { say: `[turn ${turn}${variant}] ${text}`, tool_calls: [] };
}

export function startTalker(o: { port?: number; host?: string } = {}): Promise<AgentServer> {
  return startAgentServer({ ...o, info: { agent_id: TALKER_ID, agent_version: '0.1.0' }, decide: talkerDecide });
}

if (isMain(import.meta.url)) void runAgentProcess('talker', startTalker);
