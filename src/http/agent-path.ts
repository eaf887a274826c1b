/**
 * Where a virtual agent is served (docs/routing.md#virtual-agents): `/agents/<name>/health`, `/v1/info`,
 * `/v1/responses` and the coaching paths. Fastify routes declare the `/agents/:agent` prefix; the batch front
 * (batch-front.ts) reads the batch path itself with batchAgent.
 */
import type { FastifyReply } from 'fastify';
import { unknownAgentDetail } from '../batch/handle-batch.js';
import { errorBody } from '../errors.js';
import { AGENT_BATCH_ENDPOINT, BATCH_ENDPOINT } from '../metrics.js';

/** The default agent's batch path. */
export const BATCH_PATH = BATCH_ENDPOINT;
/** The route prefix of every virtual agent endpoint, as fastify patterns spell it. */
export const AGENT_PREFIX_PATTERN = '/agents/:agent';
/** A virtual agent's batch endpoint, as fastify's route (and the HTTP metrics' `endpoint` label) names it. */
export const AGENT_BATCH_PATTERN = AGENT_BATCH_ENDPOINT;

const AGENTS = '/agents/';

export interface AgentParams {
  agent: string;
}

/** A URL's path: what comes before its query string, if it has one. */
export function pathOfUrl(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The longest agent segment read (fastify's maxParamLength, which its router applied here before). */
const MAX_SEGMENT = 100;

/**
 * The agent a batch path is for (`url`'s path, its query string ignored): `''` for the default agent's
 * `/v1/responses`, the name for `/agents/<name>/v1/responses` (percent-decoded, as fastify's router decodes a
 * parameter), undefined for any other path or a segment that does not decode (fastify answers those). A name
 * the config does not have is the batch core's 404 (handle-batch.ts). Plain linear string operations: the URL
 * is client text.
 */
export function batchAgent(url: string): string | undefined {
  const path = pathOfUrl(url);
  if (path === BATCH_PATH) return '';
  const end = path.length - BATCH_PATH.length;
  if (end - AGENTS.length <= 0 || !path.startsWith(AGENTS) || !path.endsWith(BATCH_PATH)) return undefined;
  const segment = path.slice(AGENTS.length, end);
  if (segment.length > MAX_SEGMENT || segment.includes('/')) return undefined;
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The 404 for an agent the running config does not have; `undefined` asks for the default agent. */
export function sendUnknownAgent(reply: FastifyReply, name: string | undefined): FastifyReply {
  return reply.code(404).send(errorBody('GATEWAY_ERR_UNKNOWN_AGENT', unknownAgentDetail(name)));
}
