/**
 * The 422 of the agent endpoints, FastAPI's exact shape `{"detail": [...]}` (docs/protocol-fidelity.md#agent-and-http-errors):
 * BENCH and GEN read it as they read a reference server's. Shared by the batch route and coaching.
 */
import type { FastifyReply } from 'fastify';
import { stringifyExact } from '../protocol/json/exact-json.js';
import type { ValidationIssue } from '../protocol/types.js';

export function send422(reply: FastifyReply, detail: ValidationIssue[]): FastifyReply {
  return reply.code(422).header('content-type', 'application/json').send(stringifyExact({ detail }));
}
