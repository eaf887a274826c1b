/**
 * The raw front of the hot path: `POST /v1/responses` is answered on node:http directly, every other request
 * goes to fastify (installed through fastify's `serverFactory`, see app.ts).
 *
 * Why (docs/performance.md, S1): the small-batch target leaves no room for per-request work that does nothing
 * for the batch. Every batch would otherwise go through fastify's request and reply objects, its async hooks
 * and its send pipeline, which cost about 10 µs a request in front of a bare JSON proxy here. This front does for this
 * one path what fastify and the app's hooks did: body limit (413), HTTP metrics, `x-gateway-overhead-ms`, JSON
 * errors. Requests it does not take (another path or method, a query string, a gateway that is closing and
 * must answer 503) are left to fastify unchanged.
 *
 * The server itself is bounded here for every path (docs/configuration.md#limits-and-timeouts): headers and body receive
 * time (408 with a JSON detail), idle keep-alive time, open connections, and the body bytes batches hold at
 * once (src/memory/budget.ts). While the gateway drains for shutdown every answer closes its connection.
 *
 * A client key in the address (`/k/<key>/...`, docs/operations.md#client-keys) is stripped from `req.url` first thing,
 * for every request: what is left is the path served, by this front or by fastify, which gets the key with
 * the request (http/request-client.ts). Batches answered here decide the key with the same pure function
 * as fastify's hook (src/clients/access.ts), before any body byte is read.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { onClientGone } from '../abort.js';
import type { BudgetHold } from '../memory/budget.js';
import { mbToBytes, ROOT_AGENT, type GatewayConfig } from '../config/schema.js';
import type { GatewayState } from '../batch/gateway-state.js';
import { answerHeaders, handleBatch, type BatchAnswer } from '../batch/handle-batch.js';
import { clientConnectionCap } from '../fd-limit.js';
import { readServerTls } from '../config/tls-files.js';
import { ConnectionSlots } from './connection-slots.js';
import { discardBody } from './body-discard.js';
import { ReceiveDeadlines } from './receive-deadlines.js';
import { errorBody, internalCode, messageOf, registeredBody } from '../errors.js';
import { ACCESS_LOG_MESSAGE, accessLogLine, bodyTimedOut as timedOutBody, bodyTooLarge, closing, drainHeaders, OVERHEAD_HEADER, overBudgetBody, overBudgetHeaders, overheadValue } from './front-rules.js';
import { accessLabel, ANONYMOUS, decideAgent, refusalHeaders, type Access } from '../clients/access.js';
import { accessFor, clientLabelOf, rememberPathKey, takeKeyPath } from './request-client.js';
import { AGENT_BATCH_PATTERN, BATCH_PATH, batchAgent } from './agent-path.js';
import { bodyLength, mayStream, ResponseWriter, writeBody } from './answer-write.js';
import { BodyBytes } from '../protocol/body-bytes.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';


/** What the front needs of the app, available once the app is built. */
export interface FrontHost {
  gateway: GatewayState;
  log: FastifyBaseLogger;
  bodyLimit: number;
  bodyLimitMb: number;
  /** True from the moment `app.close()` starts: fastify then answers 503 (return503OnClosing). */
  closing(): boolean;
  /** True while the gateway drains for shutdown (src/shutdown.ts): every answer closes its connection. */
  draining(): boolean;
}

type FrontServerOptions = Pick<
  GatewayConfig['server'],
  'keep_alive_timeout_s' | 'headers_timeout_s' | 'body_timeout_s' | 'max_connections' | 'tls' | 'tls_handshake_timeout_s'
>;

/** What one front server keeps: its receive clock and the options in force (replaced after a reload). */
interface Front {
  server: Server;
  deadlines: ReceiveDeadlines;
  slots: ConnectionSlots;
  opts: FrontServerOptions;
}

/**
 * Put the server's bounds in force. Node reads these properties per connection or per check, so a reload's
 * values apply to what comes next; only the checking interval is fixed at start (at most a second).
 */
function apply(front: Front, opts: FrontServerOptions): void {
  front.opts = opts;
  front.server.keepAliveTimeout = ms(opts.keep_alive_timeout_s);
  front.server.headersTimeout = ms(opts.headers_timeout_s);
  // Capped below the open-file limit so that backend connections, Redis and probes always find a descriptor.
  front.slots.cap = clientConnectionCap(opts.max_connections);
  front.deadlines.timeoutMs = ms(opts.body_timeout_s);
}

const ms = (s: number): number => Math.max(1, Math.round(s * 1000));

/**
 * fastify's serverFactory: a node:http server (node:https with server.tls, docs/deployment.md#tls) whose listener takes
 * the batch path before fastify. Both serve the same HTTP/1.1 contract with the same bounds.
 */
export function createFrontServer(
  fastifyHandler: RequestListener,
  host: () => FrontHost | undefined,
  opts: FrontServerOptions,
): Server {
  const deadlines = new ReceiveDeadlines(ms(opts.body_timeout_s));
  const headersTimeout = ms(opts.headers_timeout_s);
  const httpOptions = {
    keepAliveTimeout: ms(opts.keep_alive_timeout_s),
    headersTimeout,
    // The body clock is ours (receive-deadlines.ts): node's would also run while a batch waits for admission.
    requestTimeout: 0,
    // Node checks its headers deadline this often: within about a second, as for the body.
    connectionsCheckingInterval: Math.max(1, Math.min(1000, Math.floor(headersTimeout / 2))),
  };
  const listener: RequestListener = (req, res) => {
    const pathKey = takeKeyPath(req);
    const socket = req.socket;
    slots.busy(socket);
    res.once('close', () => slots.done(socket));
    const h = host();
    if (h !== undefined) {
      // A reload replaced the config: its server bounds apply from this request on.
      const current = h.gateway.current.config.server;
      if (current !== front.opts) apply(front, current);
      if (h.draining()) res.shouldKeepAlive = false;
    }
    // '' is the default agent's /v1/responses, a name a virtual agent's (http/agent-path.ts).
    const agent = h === undefined || h.closing() || req.method !== 'POST' ? undefined : batchAgent(req.url ?? '');
    if (h === undefined || agent === undefined) {
      if (pathKey !== undefined) rememberPathKey(req, pathKey);
      deadlines.track(req, res, () => bodyTimedOut(front, h, req, res, clientLabelOf(req)));
      fastifyHandler(req, res);
      return;
    }
    serveBatch(front, h, req, res, agent, pathKey);
  };
  // https.Server is an http.Server for everything the front and fastify use (listen, close, the request events).
  const server: Server =
    opts.tls === undefined
      ? createServer(httpOptions, listener)
      : createHttpsServer({ ...httpOptions, handshakeTimeout: ms(opts.tls_handshake_timeout_s), ...readServerTls(opts.tls) }, listener);
  const slots = new ConnectionSlots(clientConnectionCap(opts.max_connections));
  // Every TCP connection takes a slot as it opens, a TLS one during its handshake too (a client that never
  // finishes it holds a file descriptor all the same); over TLS the requests' socket is the TLS socket made
  // once the handshake is done, which then stands for its TCP connection.
  server.on('connection', (socket: Socket) => slots.admit(socket, opts.tls !== undefined));
  if (opts.tls !== undefined) server.on('secureConnection', (socket: Socket) => slots.secured(socket));
  const front: Front = { server, deadlines, slots, opts };
  // What fastify sets on the server it creates itself (it does not when given a serverFactory), and more.
  apply(front, opts);
  server.requestTimeout = 0;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => clientError(front.opts, err, socket));
  server.on('listening', () => deadlines.start());
  server.on('close', () => deadlines.stop());
  return server;
}

/**
 * Errors before a request exists (node's headers timeout, a malformed request): a JSON answer, then close.
 * The admin listener answers them the same way (admin-app.ts).
 */
export function clientError(opts: Pick<GatewayConfig['server'], 'headers_timeout_s'>, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const status = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const body = JSON.stringify(
    status === 408
      ? registeredBody('GATEWAY_ERR_REQUEST_TIMEOUT', 'headers', opts.headers_timeout_s)
      : status === 431
        ? registeredBody('GATEWAY_ERR_HEADERS_TOO_LARGE')
        : errorBody('GATEWAY_ERR_BAD_REQUEST', 'malformed HTTP request'),
  );
  const head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  // Destroyed once written: the client may never close its side (a trickler), and a half-open socket would
  // keep its file descriptor.
  socket.end(head + body, () => socket.destroy());
}

/** A body still incomplete at its deadline: 408, and the connection closes after it. */
function bodyTimedOut(front: Front, h: FrontHost | undefined, req: IncomingMessage, res: ServerResponse, client: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(timedOutBody(front.opts.body_timeout_s));
  const agent = h === undefined ? undefined : batchAgent(req.url ?? '');
  if (h !== undefined && agent !== undefined) {
    reply(h, res, endpointOf(agent), 408, body, closing(), performance.now(), client);
    return;
  }
  res.writeHead(408, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...closing() });
  res.end(body);
}

/** The `endpoint` label of a batch's HTTP metrics: fastify's route pattern, so names never become label values. */
function endpointOf(agent: string): string {
  return agent === '' ? BATCH_PATH : AGENT_BATCH_PATTERN;
}

/**
 * `agent`: '' for the default agent, else a virtual agent's name as the URL has it (handleBatch looks it up);
 * `pathKey`: the client key the address carried (`/k/<key>`), if any.
 */
function serveBatch(front: Front, h: FrontHost, req: IncomingMessage, res: ServerResponse, agent: string, pathKey: string | undefined): void {
  const t0 = performance.now();
  const table = h.gateway.current.clients;
  // Without clients: and without a /k/ address, the one check a batch pays.
  const keyed = table === undefined && pathKey === undefined ? undefined : accessFor(table, req, pathKey, 'required');
  // A key limited to some agents (clients.<name>.agents) is refused the others here, before any body byte.
  const access = keyed === undefined ? undefined : decideAgent(keyed, agent === '' ? ROOT_AGENT : agent);
  if (access !== undefined && !access.ok) {
    // For the log line's path: `/k/REDACTED/v1/responses`, as fastify's access log writes it.
    if (pathKey !== undefined) rememberPathKey(req, pathKey);
    refused(h, req, res, agent, access, t0);
    return;
  }
  const client = access?.client?.name;
  const label = client ?? ANONYMOUS;
  const declared = Number(req.headers['content-length']);
  if (declared > h.bodyLimit) {
    tooLarge(h, req, res, agent, t0, label, 0);
    return;
  }
  let hold: BudgetHold | undefined;
  // 'close' comes once, answered or not: the bytes are given back, or a client that left frees its place.
  res.once('close', () => hold?.release());
  // Until its first body byte a request holds nothing (docs/memory-budget.md): a client that sends headers and
  // then nothing cannot keep room from others. The body clock runs meanwhile, so such a client gets its 408.
  front.deadlines.track(req, res, () => bodyTimedOut(front, h, req, res, label));
  const ask = (): void => {
    if (res.destroyed || res.headersSent) return;
    // Waiting for room is not receiving: the body clock starts again once the request is admitted.
    front.deadlines.done(req);
    // A body of unknown length (chunked) reserves what it may grow to; what it did not use is given back at its end.
    const reserved = Number.isFinite(declared) ? declared : Math.min(h.bodyLimit, h.gateway.memory.limit);
    hold = h.gateway.memory.admit(
      reserved,
      (held) => receive(front, h, req, res, agent, t0, held, reserved, client),
      () => overBudget(h, req, res, agent, t0, label),
      t0,
    );
  };
  if (declared === 0 || req.complete) ask();
  else req.once('readable', ask);
}

function receive(
  front: Front,
  h: FrontHost,
  req: IncomingMessage,
  res: ServerResponse,
  agent: string,
  t0: number,
  hold: BudgetHold,
  reserved: number,
  client: string | undefined,
): void {
  if (res.destroyed) return;
  const label = client ?? ANONYMOUS;
  const declared = Number(req.headers['content-length']);
  const body = new BodyBytes(Number.isSafeInteger(declared) && declared > 0 ? declared : undefined);
  // Set once the request is answered before its body was read whole (413, 408): the rest is dropped.
  let stopped = false;
  front.slots.receivingBody(req.socket);
  front.deadlines.track(req, res, () => {
    stopped = true;
    body.drop();
    bodyTimedOut(front, h, req, res, label);
  });
  req.on('data', (chunk: Buffer) => {
    if (stopped) return;
    if (body.size + chunk.length > h.bodyLimit) {
      stopped = true;
      const received = body.size + chunk.length;
      body.drop();
      tooLarge(h, req, res, agent, t0, label, received);
      return;
    }
    // Past its reservation (a chunked body larger than the whole budget, admitted alone) it is counted as it comes.
    const over = body.size + chunk.length - Math.max(reserved, body.size);
    if (over > 0) hold.grow(over);
    body.add(chunk);
  });
  req.on('error', () => undefined); // a client that resets mid-body: nothing to answer, 'close' cleans up
  req.on('end', () => {
    front.deadlines.done(req);
    front.slots.bodyDone(req.socket);
    if (stopped) return;
    if (body.size < reserved) hold.shrink(reserved - body.size);
    const endpoint = endpointOf(agent);
    const ex = {
      agent: agent === '' ? undefined : agent,
      body: body.received(),
      headers: req.headers,
      log: h.log,
      onClientGone: (fn: () => void) => onClientGone(res, fn),
      client,
      memory: hold,
      stream: mayStream(req) ? new ResponseWriter(res, noop, () => drainHeaders(h.draining())) : undefined,
    };
    handleBatch(h.gateway, ex).then(
      (a) =>
        a.streamed === true
          ? h.gateway.metrics.observeHttp(endpoint, 200, (performance.now() - t0) / 1000, label)
          : reply(h, res, endpoint, a.status, a.body, answerHeaders(a, performance.now() - t0), t0, label),
      (err: unknown) => {
        h.log.error({ err }, 'internal error');
        // A streamed answer already begun cannot become an error: the client sees it cut off.
        if (res.headersSent) res.destroy();
        reply(h, res, endpoint, 500, JSON.stringify(errorBody(internalCode(err), messageOf('GATEWAY_ERR_INTERNAL'))), {}, t0, label);
      },
    );
  });
  // Read from here: until admitted, TCP held the body back at the client.
  req.resume();
}

/** No room came within server.admission_timeout_s of the request's arrival: 503, and the unread body is dropped with the connection. */
function overBudget(h: FrontHost, req: IncomingMessage, res: ServerResponse, agent: string, t0: number, client: string): void {
  h.gateway.metrics.admissionTimeouts.inc();
  const body = JSON.stringify(overBudgetBody(h.gateway.current.config.server.admission_timeout_s));
  reply(h, res, endpointOf(agent), 503, body, overBudgetHeaders(), t0, client);
  req.resume();
}

const noop = (): void => undefined;

/**
 * 413, written once the rest of the body is read and dropped (up to server.body_discard_mb, http/body-discard.ts)
 * so that a client sending its whole body first can read it; the connection closes after it.
 */
function tooLarge(h: FrontHost, req: IncomingMessage, res: ServerResponse, agent: string, t0: number, client: string, received: number): void {
  discardBody(req, mbToBytes(h.gateway.current.config.server.body_discard_mb), received, () => {
    reply(h, res, endpointOf(agent), 413, JSON.stringify(bodyTooLarge(h.bodyLimitMb)), closing(), t0, client);
  });
}

/**
 * A missing, wrong or unexpected client key: what fastify's client-keys hook answers on every other path
 * (plugins/client-keys.ts), and its access-log line (plugins/access-log.ts), the key redacted.
 */
function refused(h: FrontHost, req: IncomingMessage, res: ServerResponse, agent: string, access: Extract<Access, { ok: false }>, t0: number): void {
  const label = accessLabel(access);
  reply(h, res, endpointOf(agent), access.status, JSON.stringify(errorBody(access.code, access.detail)), refusalHeaders(access), t0, label);
  req.resume();
  h.log.info(accessLogLine(req, req.url ?? '/', access.status, endpointOf(agent), label, performance.now() - t0), ACCESS_LOG_MESSAGE);
}

function reply(
  h: FrontHost,
  res: ServerResponse,
  endpoint: string,
  status: BatchAnswer['status'] | 401 | 403 | 404 | 408 | 413 | 500 | 503,
  body: string | AnswerBody,
  headers: Record<string, string>,
  t0: number,
  client: string,
): void {
  if (res.headersSent || res.destroyed) return;
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(bodyLength(body));
  headers[OVERHEAD_HEADER] ??= overheadValue(performance.now() - t0);
  Object.assign(headers, drainHeaders(h.draining()));
  res.writeHead(status, headers);
  writeBody(res, body);
  // What plugins/http-metrics.ts records for fastify's routes.
  h.gateway.metrics.observeHttp(endpoint, status, (performance.now() - t0) / 1000, client);
}
