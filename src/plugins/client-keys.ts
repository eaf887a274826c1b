/** Client keys on the agent listener's fastify routes, unknown paths too (docs/operations.md#client-keys). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { decideAgent, refusalHeaders, type KeyRule } from '../clients/access.js';
import { ROOT_AGENT } from '../config/schema.js';
import { isJsonObject } from '../protocol/schemas.js';
import { AGENT_PREFIX_PATTERN } from '../http/agent-path.js';
import { isHealthPath } from '../clients/key-path.js';
import { errorBody } from '../errors.js';
import { accessFor, pathKeyOf, rememberAccess } from '../http/request-client.js';
import { isMetricsPath } from './auth.js';

/** Undefined for paths no agent owns (`/metrics`, a path no route serves). */
function agentOf(req: FastifyRequest): string | undefined {
  const pattern = req.routeOptions.url;
  if (pattern === undefined || isMetricsPath(req)) return undefined;
  if (pattern.startsWith(`${AGENT_PREFIX_PATTERN}/`)) {
    const params: unknown = req.params;
    return isJsonObject(params) && typeof params.agent === 'string' ? params.agent : undefined;
  }
  return ROOT_AGENT;
}

function ruleFor(req: FastifyRequest): KeyRule {
  if (isMetricsPath(req)) return 'ignored';
  return isHealthPath(req.url) || isHealthPath(req.routeOptions.url ?? '') ? 'optional' : 'required';
}

async function clientKeys(app: FastifyInstance): Promise<void> {
  // Callback style, not async: no promise per request on the paths this hook lets through.
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const table = app.gateway.current.clients;
    const pathKey = pathKeyOf(req.raw);
    if (table === undefined && pathKey === undefined) {
      done();
      return;
    }
    const keyed = accessFor(table, req.raw, pathKey, ruleFor(req));
    const agent = agentOf(req);
    // A key limited to some agents (clients.<name>.agents) is refused the endpoints of the others.
    const access = agent === undefined ? keyed : decideAgent(keyed, agent);
    rememberAccess(req.raw, access);
    if (access.ok) {
      done();
      return;
    }
    void reply.code(access.status).headers(refusalHeaders(access)).send(errorBody(access.code, access.detail));
  });
}

export default fp(clientKeys, { name: 'magma-gateway-client-keys', fastify: '5.x', decorators: { fastify: ['gateway'] } });
