/**
 * `/gateway/backends/{name}/...` forwarded to a replica of that backend (docs/operations.md#admin-api). One proxy
 * registration, the replica chosen per request from the current runtime, so a reload's backends are reachable at once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import httpProxy from '@fastify/http-proxy';
import type { FastifyInstance } from 'fastify';
import type { GatewayRuntime } from '../runtime.js';
import type { Replica } from '../upstream/replica.js';
import { errorBody, GatewayError, type GatewayErrCode } from '../errors.js';
import { stringField } from '../http/request-fields.js';

const REPLICA_HEADER = 'x-gateway-replica';

/** Request headers that belong to the gateway hop, never to the agent. */
const HOP_HEADERS = ['authorization', 'proxy-authorization', REPLICA_HEADER];

type Pick = { replica: Replica } | { status: 404 | 503; code: GatewayErrCode; detail: string };

/** The pinned one, else round robin: proxied calls are rare and short, so load-aware choice would buy nothing. */
function pickReplica(runtime: GatewayRuntime, name: string, pin: string | undefined, turn: Map<string, number>): Pick {
  const backend = runtime.upstreams.backends.get(name);
  if (backend === undefined) return { status: 404, code: 'GATEWAY_ERR_NOT_FOUND', detail: `unknown backend "${name}"` };
  if (pin !== undefined) {
    const replica = /^\d+$/.test(pin) ? backend.replicas[Number(pin)] : undefined;
    if (replica === undefined) return { status: 404, code: 'GATEWAY_ERR_NOT_FOUND', detail: `backend "${name}" has no replica ${pin}` };
    return { replica };
  }
  const routable = runtime.upstreams.routable(name);
  const n = turn.get(name) ?? 0;
  // Undefined exactly when no replica is routable (n % 0 is NaN).
  const replica = routable[n % routable.length];
  if (replica === undefined) return { status: 503, code: 'GATEWAY_ERR_NO_READY_REPLICA', detail: `backend "${name}" has no ready replica` };
  turn.set(name, n + 1);
  return { replica };
}

export async function passthrough(app: FastifyInstance): Promise<void> {
  // Bodies go to the agent as the byte stream they came as: http-proxy adds its streaming parsers in its own
  // context; the gateway's text parser (for exact JSON) must not be inherited there.
  app.removeAllContentTypeParsers();
  // Keyed by the request object: reply-from's hooks type requests for any server kind (http2 too).
  const picked = new WeakMap<object, { replica: Replica; timeoutMs: number }>();
  const turn = new Map<string, number>();
  const chosen = (req: object): { replica: Replica; timeoutMs: number } => {
    const c = picked.get(req);
    if (c === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'passthrough: no replica chosen for this request');
    return c;
  };

  await app.register(httpProxy, {
    upstream: '',
    prefix: '/gateway/backends/:name',
    internalRewriteLocationHeader: false,
    disableRequestLogging: true,
    undici: { connect: { timeout: 5_000 } },
    // reply-from's own connection pool (not the replicas' pools, which reloads close): released on shutdown.
    destroyAgent: true,
    preHandler(req, reply, done) {
      const runtime = app.gateway.current;
      const name = stringField(req.params, 'name') ?? '';
      const pin = req.headers[REPLICA_HEADER];
      const pick = pickReplica(runtime, name, Array.isArray(pin) ? pin[0] : pin, turn);
      if ('status' in pick) {
        void reply.code(pick.status).send(errorBody(pick.code, pick.detail));
        return;
      }
      picked.set(req, { replica: pick.replica, timeoutMs: runtime.upstreams.timeoutMs(name) });
      done();
    },
    handler(req, reply, dest, options) {
      const { replica, timeoutMs } = chosen(req);
      return reply.from(replica.basePath + dest, { ...options, timeout: timeoutMs });
    },
    replyOptions: {
      getUpstream: (req) => chosen(req).replica.origin,
      rewriteRequestHeaders(req, headers) {
        const out: IncomingHttpHeaders = { ...headers };
        for (const h of HOP_HEADERS) delete out[h];
        return { ...out, ...chosen(req).replica.headers };
      },
      rewriteHeaders(headers, req) {
        return req === undefined ? headers : { ...headers, [REPLICA_HEADER]: chosen(req).replica.id };
      },
      // A proxy for looking at agents must show what the agent said: no retries (reply-from retries GETs on 503).
      retryDelay: () => null,
      onError(reply, { error }) {
        const { replica } = chosen(reply.request);
        // undici's timeout errors carry statusCode 504 without declaring it in their type.
        const status = 'statusCode' in error && error.statusCode === 504 ? 504 : 502;
        reply.request.log.warn({ replica: replica.id, err: error.message }, 'passthrough to backend failed');
        void reply
          .code(status)
          .send(errorBody('GATEWAY_ERR_BACKEND_UNANSWERED', `backend replica ${replica.id} did not answer: ${error.message}`));
      },
    },
  });
}
