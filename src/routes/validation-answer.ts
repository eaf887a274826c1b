/** The 422 of the agent endpoints in FastAPI's exact shape (docs/protocol-fidelity.md#agent-and-http-errors). */
import type { FastifyReply } from 'fastify';
import { stringifyExact } from '../protocol/json/exact-json.js';
import type { ValidationIssue } from '../protocol/types.js';

export function send422(reply: FastifyReply, detail: ValidationIssue[]): FastifyReply {
  return reply.code(422).header('content-type', 'application/json').send(stringifyExact({ detail }));
}
