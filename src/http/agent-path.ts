/**
 * Where a virtual agent is served (docs/routing.md#virtual-agents): `/agents/<name>/health`, `/v1/info`,
 * `/v1/responses` and the coaching paths. Fastify routes declare the `/agents/:agent` prefix; the raw batch
 * front (batch-front.ts) reads the batch path itself with batchAgent, in plain linear string operations: the
 * URL is client text.
 */
import type { FastifyReply } from 'fastify';
import { unknownAgentDetail } from '../batch/handle-batch.js';
import { MAX_AGENT_NAME_LENGTH } from '../config/schema.js';
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

/** A character of a config name ([A-Za-z0-9_.-], config/schema.ts). */
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45;
}

/**
 * The agent a batch URL is for: `''` for the default agent's `/v1/responses`, the name for
 * `/agents/<name>/v1/responses`, undefined for any other URL (another path, a query string, a percent-encoded,
 * dot-only or over-long segment), which fastify then answers by its own rules. Only names a config could hold
 * are taken, so both fronts answer every URL alike: fastify's router decodes and normalises what this leaves to
 * it.
 */
export function batchAgent(url: string): string | undefined {
  if (url === BATCH_PATH) return '';
  const end = url.length - BATCH_PATH.length;
  const length = end - AGENTS.length;
  if (length <= 0 || length > MAX_AGENT_NAME_LENGTH || !url.startsWith(AGENTS) || !url.endsWith(BATCH_PATH)) return undefined;
  let dotsOnly = true;
  for (let i = AGENTS.length; i < end; i++) {
    const c = url.charCodeAt(i);
    if (!isNameChar(c)) return undefined;
    if (c !== 46) dotsOnly = false;
  }
  return dotsOnly ? undefined : url.slice(AGENTS.length, end);
}

/** The 404 for an agent the running config does not have; `undefined` asks for the default agent. */
export function sendUnknownAgent(reply: FastifyReply, name: string | undefined): FastifyReply {
  return reply.code(404).send(errorBody('GATEWAY_ERR_UNKNOWN_AGENT', unknownAgentDetail(name)));
}
