/**
 * The agent listener's server: batch paths are answered here on node:http, the rest by fastify, whose request and
 * reply objects, hooks and send pipeline cost about 10 µs a batch (docs/performance.md).
 */
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { GatewayConfig } from '../config/schema.js';
import { clientConnectionCap } from '../fd-limit.js';
import { readServerTls } from '../config/tls-files.js';
import { errorBody, GatewayError, registeredBody } from '../errors.js';
import { ConnectionSlots } from './connection-slots.js';
import { ReceiveDeadlines } from './receive-deadlines.js';
import { FrontExchange, type FrontHost, type FrontParts } from './front-exchange.js';
import { bodyTimedOut, closing } from './front-rules.js';
import { takeKeyPath } from './request-client.js';
import { batchAgent } from './agent-path.js';

type FrontServerOptions = Pick<
  GatewayConfig['server'],
  'keep_alive_timeout_s' | 'headers_timeout_s' | 'body_timeout_s' | 'max_connections' | 'tls' | 'tls_handshake_timeout_s'
>;

const ms = (s: number): number => Math.max(1, Math.round(s * 1000));

export class BatchFront implements FrontParts {
  readonly deadlines: ReceiveDeadlines;
  readonly slots: ConnectionSlots;
  private opts: FrontServerOptions;
  private server: Server | undefined;
  private fastify: RequestListener | undefined;
  private attached: FrontHost | undefined;

  constructor(opts: FrontServerOptions) {
    this.opts = opts;
    this.deadlines = new ReceiveDeadlines(ms(opts.body_timeout_s));
    // Capped below the open-file limit so that backend connections, Redis and probes always find a descriptor.
    this.slots = new ConnectionSlots(clientConnectionCap(opts.max_connections));
  }

  get host(): FrontHost {
    if (this.attached === undefined) throw new GatewayError('GATEWAY_ERR_INTERNAL', 'the batch front has no app attached');
    return this.attached;
  }

  attach(host: FrontHost): void {
    this.attached = host;
  }

  bodyTimeoutS(): number {
    return this.opts.body_timeout_s;
  }

  /** Tests inject into it (light-my-request). */
  readonly listener: RequestListener = (req, res) => this.take(req, res);

  createServer(fastifyHandler: RequestListener): Server {
    this.fastify = fastifyHandler;
    const opts = this.opts;
    const headersTimeout = ms(opts.headers_timeout_s);
    const httpOptions = {
      keepAliveTimeout: ms(opts.keep_alive_timeout_s),
      headersTimeout,
      // The body clock is ours (receive-deadlines.ts): node's would also run while a batch waits for admission.
      requestTimeout: 0,
      connectionsCheckingInterval: Math.max(1, Math.min(1000, Math.floor(headersTimeout / 2))),
    };
    // https.Server is an http.Server for everything the front and fastify use (listen, close, the request events).
    const server: Server =
      opts.tls === undefined
        ? createServer(httpOptions, this.listener)
        : createHttpsServer(Object.assign({}, httpOptions, { handshakeTimeout: ms(opts.tls_handshake_timeout_s) }, readServerTls(opts.tls)), this.listener);
    this.server = server;
    // A TLS connection takes its slot during its handshake too: a client that never finishes it holds a descriptor.
    server.on('connection', (socket: Socket) => this.slots.admit(socket, opts.tls !== undefined));
    if (opts.tls !== undefined) server.on('secureConnection', (socket: Socket) => this.slots.secured(socket));
    // What fastify sets on the server it creates itself (it does not when given a serverFactory), and more.
    this.apply(opts);
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => clientError(this.opts, err, socket));
    // Node would send `100 Continue` before any handler runs: a body over the limit would get it, then a 413.
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => this.take(req, res, true));
    server.on('listening', () => this.deadlines.start());
    server.on('close', () => this.deadlines.stop());
    return server;
  }

  /** `continueAsked`: the client waits for `100 Continue` before it sends its body. */
  private take(req: IncomingMessage, res: ServerResponse, continueAsked = false): void {
    const pathKey = takeKeyPath(req);
    const socket = req.socket;
    this.slots.busy(socket);
    res.once('close', () => this.answered(socket));
    const h = this.attached;
    if (h !== undefined) {
      const current = h.gateway.current.config.server;
      if (current !== this.opts) this.apply(current);
      if (h.draining()) res.shouldKeepAlive = false;
    }
    const agent = h === undefined || req.method !== 'POST' ? undefined : batchAgent(req.url ?? '');
    if (agent !== undefined) {
      new FrontExchange(this, req, res, agent, pathKey).serve(continueAsked);
      return;
    }
    // fastify answers a declared length over its limit before it reads a byte: no `100 Continue` for that one.
    if (continueAsked && !(Number(req.headers['content-length']) > (h?.bodyLimit ?? Infinity))) res.writeContinue();
    this.deadlines.track(req, res, () => bodyTimedOutElsewhere(this.opts, res));
    this.fastify?.(req, res);
  }

  /** While draining, connections are closed as they become idle. */
  private answered(socket: Socket): void {
    this.slots.done(socket);
    if (this.attached?.draining() === true) this.server?.closeIdleConnections();
  }

  /** Node reads these per connection or per check: a reload's values apply to what comes next. */
  private apply(opts: FrontServerOptions): void {
    this.opts = opts;
    if (this.server !== undefined) {
      this.server.keepAliveTimeout = ms(opts.keep_alive_timeout_s);
      this.server.headersTimeout = ms(opts.headers_timeout_s);
    }
    this.slots.cap = clientConnectionCap(opts.max_connections);
    this.deadlines.timeoutMs = ms(opts.body_timeout_s);
  }
}

/** Errors before a request exists (node's headers timeout, a malformed request), on both listeners. */
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
  // The client may never close its side (a trickler): a half-open socket would keep its file descriptor.
  socket.end(head + body, () => socket.destroy());
}

function bodyTimedOutElsewhere(opts: FrontServerOptions, res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(bodyTimedOut(opts.body_timeout_s));
  res.writeHead(408, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...closing() });
  res.end(body);
}
