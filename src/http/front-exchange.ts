/** One batch request on the batch front, from its headers to its answer: serve, admit, receive, run. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { onClientGone } from '../abort.js';
import type { BudgetHold } from '../memory/budget.js';
import { ROOT_AGENT } from '../config/schema.js';
import type { GatewayState } from '../batch/gateway-state.js';
import type { BatchAnswer } from '../batch/batch-cycle.js';
import { handleBatch } from '../batch/handle-batch.js';
import { errorBody, internalCode, messageOf } from '../errors.js';
import { AGENT_BATCH_ENDPOINT, BATCH_ENDPOINT } from '../metrics.js';
import { BodyBytes } from '../protocol/body-bytes.js';
import { ReadPauses } from '../upstream/read-pauses.js';
import type { AnswerBody } from '../protocol/answer/answer-body.js';
import { ANONYMOUS, accessLabel, decideAgent, refusalHeaders } from '../clients/access.js';
import type { ConnectionSlots } from './connection-slots.js';
import type { ReceiveDeadlines } from './receive-deadlines.js';
import { accessFor } from './request-client.js';
import { bodyLength, mayStream, ResponseWriter, writeAnswer } from './answer-write.js';
import { answerAndLinger, lingerBounds } from './lingering-close.js';
import {
  answerHeaders,
  bodyTimedOut,
  bodyTooLarge,
  closing,
  closingBody,
  drainHeaders,
  logAnswer,
  overBudgetBody,
  overBudgetHeaders,
  type AnswerFacts,
} from './front-rules.js';

export interface FrontHost {
  gateway: GatewayState;
  log: FastifyBaseLogger;
  bodyLimit: number;
  bodyLimitMb: number;
  closing(): boolean;
  draining(): boolean;
}

export interface FrontParts {
  host: FrontHost;
  deadlines: ReceiveDeadlines;
  slots: ConnectionSlots;
  bodyTimeoutS(): number;
}

type Status = BatchAnswer['status'] | 401 | 403 | 404 | 408 | 413 | 500 | 503;

export class FrontExchange {
  readonly t0 = performance.now();
  /** fastify's route pattern: agent names never become label values. */
  readonly endpoint: string;
  private client: string | undefined;
  private label = ANONYMOUS;
  private hold: BudgetHold | undefined;
  private body: BodyBytes | undefined;
  private reserved = 0;
  /** Answered before its body was read whole (413, 408): the rest is not kept. */
  private stopped = false;
  private pauses: ReadPauses | undefined;

  /** @param agent '' for the default agent, else a virtual agent's name as the URL has it */
  constructor(
    private readonly front: FrontParts,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly agent: string,
    private readonly pathKey: string | undefined,
  ) {
    this.endpoint = agent === '' ? BATCH_ENDPOINT : AGENT_BATCH_ENDPOINT;
  }

  /** `continueAsked`: sent once the headers pass; a refusal before is the final answer, no body sent (RFC 9110 10.1.1). */
  serve(continueAsked: boolean): void {
    const { req, res } = this;
    if (this.front.host.closing()) {
      this.answer(503, JSON.stringify(closingBody()), closing());
      req.resume();
      return;
    }
    if (!this.decideClient()) return;
    const declared = Number(req.headers['content-length']);
    if (declared > this.front.host.bodyLimit) {
      this.refuse(413, JSON.stringify(bodyTooLarge(this.front.host.bodyLimitMb)));
      return;
    }
    if (continueAsked) res.writeContinue();
    res.once('close', () => this.hold?.release());
    // Until its first body byte a request holds nothing: a client that sends only headers gets its 408.
    this.front.deadlines.track(req, res, () => this.timedOut());
    if (declared === 0 || req.complete) this.admit(declared);
    else req.once('readable', () => this.admit(declared));
  }

  /** False when refused. */
  private decideClient(): boolean {
    const table = this.front.host.gateway.current.clients;
    if (table === undefined && this.pathKey === undefined) return true;
    const access = decideAgent(accessFor(table, this.req, this.pathKey, 'required'), this.agent === '' ? ROOT_AGENT : this.agent);
    this.label = accessLabel(access);
    if (access.ok) {
      this.client = access.client?.name;
      return true;
    }
    this.answer(access.status, JSON.stringify(errorBody(access.code, access.detail)), refusalHeaders(access));
    this.req.resume();
    return false;
  }

  private admit(declared: number): void {
    const { req, res, front: { host } } = this;
    if (res.destroyed || res.headersSent) return;
    // Waiting for room is not receiving: the body clock starts again once the request is admitted.
    this.front.deadlines.done(req);
    this.reserved = Number.isFinite(declared) ? declared : Math.min(host.bodyLimit, host.gateway.memory.limit);
    this.hold = host.gateway.memory.admit(
      this.reserved,
      (held) => this.receive(held),
      () => this.overBudget(),
      this.t0,
    );
  }

  private receive(hold: BudgetHold): void {
    const { req, res } = this;
    if (res.destroyed) return;
    this.hold = hold;
    this.body = new BodyBytes({ declared: Number(req.headers['content-length']), max: this.front.host.bodyLimit, owner: hold });
    this.front.slots.receivingBody(req.socket);
    this.front.deadlines.track(req, res, () => this.timedOut());
    // Fresh memory's pages fault in as chunks are copied: ten 50 MB bodies read 2 MB a turn held /health past 100 ms.
    this.pauses = new ReadPauses(req, () => !this.stopped);
    req.on('data', (chunk: Buffer) => this.add(chunk));
    req.on('error', () => undefined); // a client that resets mid-body: nothing to answer, 'close' cleans up
    req.on('end', () => this.received());
    req.resume();
  }

  private add(chunk: Buffer): void {
    const body = this.body;
    if (this.stopped || body === undefined) return;
    if (body.size + chunk.length > this.front.host.bodyLimit) {
      this.refuse(413, JSON.stringify(bodyTooLarge(this.front.host.bodyLimitMb)));
      return;
    }
    // Past its reservation (a chunked body larger than the whole budget, admitted alone) it is counted as it comes.
    const over = body.size + chunk.length - Math.max(this.reserved, body.size);
    if (over > 0) this.hold?.grow(over);
    body.add(chunk);
    this.pauses?.read(chunk.length);
  }

  private received(): void {
    this.front.deadlines.done(this.req);
    this.front.slots.bodyDone(this.req.socket);
    const body = this.body;
    if (this.stopped || body === undefined) return;
    if (body.size < this.reserved) this.hold?.shrink(this.reserved - body.size);
    void this.run(body);
  }

  private async run(body: BodyBytes): Promise<void> {
    const { req, res, front: { host } } = this;
    try {
      const a = await handleBatch(host.gateway, {
        agent: this.agent === '' ? undefined : this.agent,
        body: body.received(),
        headers: req.headers,
        log: host.log,
        onClientGone: (fn: () => void) => onClientGone(res, fn),
        client: this.client,
        memory: this.hold,
        stream: mayStream(req) ? new ResponseWriter(res, () => drainHeaders(host.draining()), this.sendMs()) : undefined,
      });
      if (a.streamed === true) this.observe(200);
      else this.answer(a.status, a.body, {}, a);
    } catch (err) {
      host.log.error({ err }, 'internal error');
      // A streamed answer already begun cannot become an error: the client sees it cut off.
      if (res.headersSent) res.destroy();
      this.answer(500, JSON.stringify(errorBody(internalCode(err), messageOf('GATEWAY_ERR_INTERNAL'))), {});
    }
  }

  /** The unread body is dropped with the connection. */
  private overBudget(): void {
    this.front.host.gateway.metrics.admissionTimeouts.inc();
    this.answer(503, JSON.stringify(overBudgetBody(this.front.host.gateway.current.config.server.admission_timeout_s)), overBudgetHeaders());
    this.req.resume();
  }

  private timedOut(): void {
    if (this.res.headersSent) {
      this.res.destroy();
      return;
    }
    this.refuse(408, JSON.stringify(bodyTimedOut(this.front.bodyTimeoutS())));
  }

  /** Before the body was read whole: what was read is dropped, the rest read and thrown away within bounds. */
  private refuse(status: 408 | 413, text: string): void {
    const { req, res } = this;
    if (res.headersSent || res.destroyed) return;
    this.stopped = true;
    this.body?.drop();
    this.hold?.release();
    this.front.deadlines.done(req);
    const headers = Object.assign(answerHeaders({}, performance.now() - this.t0), { 'content-type': 'application/json' }, closing());
    answerAndLinger(req, res, status, headers, text, lingerBounds(this.front.host.gateway.current.config.server));
    this.observe(status);
  }

  private answer(status: Status, body: string | AnswerBody, headers: Record<string, string>, facts: AnswerFacts = {}): void {
    const { res } = this;
    if (res.headersSent || res.destroyed) return;
    Object.assign(headers, answerHeaders(facts, performance.now() - this.t0), drainHeaders(this.front.host.draining()));
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(bodyLength(body));
    res.writeHead(status, headers);
    writeAnswer(res, body, this.sendMs());
    this.observe(status);
  }

  /** request_timeout_s bounds the answer too, a slow client's pace included. */
  private sendMs(): number {
    return this.front.host.gateway.current.config.request_timeout_s * 1000;
  }

  private observe(status: number): void {
    const ms = performance.now() - this.t0;
    this.front.host.gateway.metrics.observeHttp(this.endpoint, status, ms / 1000, this.label);
    logAnswer(this.front.host.log, this.req, { url: this.req.url ?? '/', status, route: this.endpoint, client: this.label, ms });
  }
}
