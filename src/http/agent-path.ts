/**
 * Where a virtual agent is served (docs/routing.md#virtual-agents): fastify routes declare the `/agents/:agent`
 * prefix; the batch front reads the batch path itself with batchAgent.
 */
import type { FastifyReply } from 'fastify';
import { unknownAgentDetail } from '../batch/handle-batch.js';
import { errorBody } from '../errors.js';
import { BATCH_ENDPOINT } from '../metrics.js';

export const AGENT_PREFIX_PATTERN = '/agents/:agent';

const AGENTS = '/agents/';

export interface AgentParams {
  agent: string;
}

export function pathOfUrl(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** fastify's maxParamLength. */
const MAX_SEGMENT = 100;

/** `''` for the default agent's batch path, the name (percent-decoded, as fastify's) for a virtual agent's. */
export function batchAgent(url: string): string | undefined {
  const path = pathOfUrl(url);
  if (path === BATCH_ENDPOINT) return '';
  const end = path.length - BATCH_ENDPOINT.length;
  if (end - AGENTS.length <= 0 || !path.startsWith(AGENTS) || !path.endsWith(BATCH_ENDPOINT)) return undefined;
  const segment = path.slice(AGENTS.length, end);
  if (segment.length > MAX_SEGMENT || segment.includes('/')) return undefined;
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

export function sendUnknownAgent(reply: FastifyReply, name: string | undefined): FastifyReply {
  return reply.code(404).send(errorBody('GATEWAY_ERR_UNKNOWN_AGENT', unknownAgentDetail(name)));
}
