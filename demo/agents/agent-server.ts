/**
 * A small, contract-conformant MAGMA agent server on node:http (protocol 2.0, docs/protocol-fidelity.md).
 *
 * node:http rather than fastify on purpose: these agents stand in for other teams' servers, so they must not
 * share the gateway's HTTP stack (a fastify quirk would otherwise be invisible in integration tests).
 *
 * Memory is history-shaped like the full-history reference agent: each candidate's memory is the input memory
 * (every key kept, big integers included, thanks to the exact JSON codec) with `history` extended by the
 * instruction and the agent's reply. A `decide` function only chooses the decision.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import type {
  AgentDecision,
  AgentError,
  AgentInfo,
  AgentInput,
  AgentOutput,
  JsonObject,
  ValidationIssue,
} from '../../src/protocol/types.js';
import {
  BodyError,
  candidateSlots,
  listenOn,
  parseBody,
  readBody,
  send422,
  sendJson,
  validateAgentRequest,
} from './protocol.js';

/** What a decide function may return: a decision (missing fields default), or an agent error for this candidate. */
export type DecideResult = Partial<AgentDecision> | { error: AgentError };

export interface DecideContext {
  requestId: string;
  candidateIndex: number;
}

export type Decide = (input: AgentInput, ctx: DecideContext) => DecideResult | Promise<DecideResult>;

export interface AgentServerOptions {
  /** 0 (the default) lets the OS choose a free port. */
  port?: number;
  /** Default 127.0.0.1: a demo agent has no business listening on every interface. */
  host?: string;
  info: { agent_id: string; agent_version?: string };
  decide: Decide;
  /** Default 64 MiB, like the gateway: BENCH batches are several MB. */
  bodyLimitBytes?: number;
  /** When it returns false, /health and /v1/responses answer 503 like a reference server loading its model. */
  isReady?: () => boolean;
}

export interface AgentServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** One entry of `memory.history`, the full-history agent's conversation log. */
export interface HistoryEntry {
  author: 'user' | 'env' | 'agent';
  content: string;
}

/** The inference-only AgentInfo, exactly the contract's fields and nothing else (BENCH validates strictly). */
export function inferenceOnlyInfo(agentId: string, agentVersion = '0.1.0'): AgentInfo {
  return {
    protocol_version: '2.0',
    agent_id: agentId,
    agent_version: agentVersion,
    capabilities: { inference: true, coaching: false },
    specialized_coaching: [],
    coaching_resume: false,
    coaching_unavailable_reason: null,
  };
}

/** The text the agent's own history entry records: the say, or the calls when it acted. */
function replyText(d: AgentDecision): string {
  if (d.tool_calls.length === 0) return d.say;
  return stringifyExact({ say: d.say, tool_calls: d.tool_calls });
}

/** Memory after this step: every input key kept, `history` extended with the instruction and the reply. */
export function extendHistory(memory: JsonObject, history: unknown[], input: AgentInput, reply: string): JsonObject {
  const added: HistoryEntry[] = [
    { author: input.instruction.type, content: input.instruction.content },
    { author: 'agent', content: reply },
  ];
  // Spread keeps own `__proto__` keys as data (Object.assign would call the setter and drop them).
  return { ...memory, history: [...history, ...added] };
}

function normalizeDecision(r: Partial<AgentDecision>): AgentDecision {
  return { say: r.say ?? '', tool_calls: r.tool_calls ?? [] };
}

async function answerCandidate(
  input: AgentInput,
  history: unknown[],
  requestId: string,
  index: number,
  decide: Decide,
  agentId: string,
): Promise<AgentOutput> {
  const base = { request_id: requestId, source_id: input.id, candidate_index: index };
  let result: DecideResult;
  try {
    result = await decide(input, { requestId, candidateIndex: index });
  } catch (err) {
    // A model failure is an error candidate inside a valid response, never an HTTP error (contract, "Agent and
    // HTTP errors"): the client keeps the rest of the batch.
    const message = err instanceof Error && err.message ? err.message : 'decide failed';
    result = { error: { code: 'agent_error', message, component: agentId } };
  }
  if ('error' in result && result.error) {
    return { ...base, status: 'error', memory: input.memory, internal_steps: [], output: null, error: result.error };
  }
  const decision = normalizeDecision(result as Partial<AgentDecision>);
  return {
    ...base,
    status: 'completed',
    memory: extendHistory(input.memory, history, input, replyText(decision)),
    internal_steps: [{ component: 'decide', agent: agentId }],
    output: decision,
    error: null,
  };
}

/** Start an agent server; resolves once it listens. */
export async function startAgentServer(opts: AgentServerOptions): Promise<AgentServer> {
  const info = inferenceOnlyInfo(opts.info.agent_id, opts.info.agent_version);
  const limit = opts.bodyLimitBytes ?? 64 * 1024 * 1024;
  const ready = opts.isReady ?? (() => true);

  async function responses(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req, limit);
    if (!ready()) return sendJson(res, 503, { detail: 'agent is not ready' });
    const parsed = parseBody(text);
    if (!parsed.ok) return send422(res, parsed.issues);
    const v = validateAgentRequest(parsed.value);
    if (!v.ok) return send422(res, v.issues);
    const { request } = v;

    // Agent-specific validation, like full-history: a history that is not a list cannot be extended.
    const histories: unknown[][] = [];
    const issues: ValidationIssue[] = [];
    request.inputs.forEach((input, i) => {
      const h = input.memory.history ?? [];
      if (!Array.isArray(h)) {
        issues.push({
          type: 'value_error',
          loc: ['body', 'inputs', i, 'memory', 'history'],
          msg: 'Value error, memory.history must be a list',
          input: h,
        });
      }
      histories.push(Array.isArray(h) ? h : []);
    });
    if (issues.length > 0) return send422(res, issues);

    const historyOf = new Map(request.inputs.map((input, i) => [input, histories[i]!]));
    const outputs = await Promise.all(
      candidateSlots(request).map(({ input, index }) =>
        answerCandidate(input, historyOf.get(input)!, request.request_id, index, opts.decide, info.agent_id),
      ),
    );
    sendJson(res, 200, outputs);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    if (path === '/health') {
      if (method !== 'GET') return sendJson(res, 405, { detail: 'Method Not Allowed' });
      return ready() ? sendJson(res, 200, { status: 'ready' }) : sendJson(res, 503, { detail: 'agent is not ready' });
    }
    if (path === '/v1/info') {
      if (method !== 'GET') return sendJson(res, 405, { detail: 'Method Not Allowed' });
      return sendJson(res, 200, info);
    }
    if (path === '/v1/responses') {
      if (method !== 'POST') return sendJson(res, 405, { detail: 'Method Not Allowed' });
      return responses(req, res);
    }
    sendJson(res, 404, { detail: 'Not Found' });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof BodyError) sendJson(res, err.status, { detail: err.message }, { connection: 'close' });
      else sendJson(res, 500, { detail: 'Internal Server Error' });
    });
  });
  // Long-lived keep-alive like uvicorn's default (5 s) is fine; undici pools reconnect when we drop idle sockets.
  server.keepAliveTimeout = 5000;

  const host = opts.host ?? '127.0.0.1';
  const port = await listenOn(server, opts.port ?? 0, host);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open for keepAliveTimeout; in-flight answers still finish.
        server.closeIdleConnections();
      }),
  };
}
