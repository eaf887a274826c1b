/**
 * A real HTTP agent on loopback for the gateway's tests: correct by default, misbehaving on demand.
 *
 * (docs/development.md#build-and-test) asks for backends that are real HTTP servers, never mocks of the gateway's own
 * code, so this is a
 * node:http server (independent of the gateway's fastify/undici stack) speaking the MAGMA v2.0 contract, and
 * every failure mode the gateway must survive (docs/protocol-fidelity.md#failures) can be switched
 * on per test or per request.
 * Bodies are read and written with the exact JSON codec so big integers in memory round-trip digit for digit.
 */
import { createServer as createHttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import { createServer, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { stringifyExact } from '../../src/protocol/json/exact-json.js';
import type { AgentError, AgentInput, AgentOutput, AgentRequest, JsonObject } from '../../src/protocol/types.js';
import { inferenceOnlyInfo } from '../../demo/agents/agent-server.js';
import {
  candidateSlots,
  idText,
  isJsonObject,
  listenOn,
  parseBody,
  readBody,
  send422,
  sendJson,
  validateAgentRequest,
} from '../../demo/agents/protocol.js';

/** One request the fake agent received, whatever its path (probes and coaching calls included). */
export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/responses`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as received (empty string for GET). */
  raw: string;
  /** The body parsed with parseExact (big integers are number markers); undefined when empty or not JSON. */
  body: unknown;
  /** Date.now() when the request headers arrived. */
  time: number;
}

/** Status overrides and body for the coaching endpoints. */
export interface CoachingBehaviour {
  /** Status for `PUT /v1/coaching/sessions/:run_id`; default 204 (409 when re-configured with another body). */
  sessionStatus?: number;
  /** Status for `DELETE /v1/coaching/sessions/:run_id`; default 204. */
  deleteStatus?: number;
  /** Status for `POST /v1/coaching`; default 200 (404 for a session never PUT, see requireSession). */
  coachStatus?: number;
  /** Answer 404 to `POST /v1/coaching` for a run_id without a session, like a real agent; default true. */
  requireSession?: boolean;
  /** Replace the SpecializedCoachingResponse body (a value, or built from the parsed request body). */
  response?: JsonObject | ((body: JsonObject) => unknown);
}

/**
 * Named failure modes. Modes affect `POST /v1/responses` unless said otherwise; several can be combined
 * (candidate edits apply in this order: malformedCandidate, wrongRequestId, reverse, missing, extra, duplicate,
 * transform). An empty object is the correct agent.
 */
export interface FakeBehaviour {
  /** Wait this long before answering (also applies to the coaching endpoints). */
  delayMs?: number;
  /** Answer this HTTP status (e.g. 500, 503, 422, 429) with `statusBody` or a typical JSON body. */
  status?: number;
  statusBody?: unknown;
  /** Extra response headers on /v1/responses (e.g. `retry-after`). */
  headers?: Record<string, string>;
  /** Destroy the connection without writing anything (connection reset). */
  reset?: boolean;
  /** 200 with headers and a full content-length, then half the body, then the socket is destroyed. */
  closeMidBody?: boolean;
  /** 200 `application/json` whose body is not JSON (this text when a string is given). */
  garbage?: boolean | string;
  /** The right candidates in reversed order. */
  reverse?: boolean;
  /** Drop the last candidate. */
  missing?: boolean;
  /** Append one more candidate (last input, candidate_index = its num_outputs). */
  extra?: boolean;
  /** Insert a copy of the first candidate right after it (one entry too many, a repeated slot). */
  duplicate?: boolean;
  /** Every candidate carries `<request_id>-wrong`. */
  wrongRequestId?: boolean;
  /** The candidate at this position of the answer becomes `status: "completed"` with `output: null`. */
  malformedCandidate?: number;
  /** Every candidate is an agent error candidate (default code "model_error") keeping the input memory. */
  errorCandidates?: boolean | Partial<AgentError>;
  /** Never answer; the socket stays open until the client gives up or close()/kill(). */
  hang?: boolean;
  /** Write this 1xx interim answer (100 Continue, 102 Processing, 103 Early Hints) before the answer. */
  interim?: 100 | 102 | 103;
  /** Status of `GET /health`: 200 `{"status":"ready"}` (default) or e.g. 503 `{"detail":"not ready"}`. */
  health?: number;
  /** Delay for `GET /health` and `GET /v1/info` (probe timeouts). */
  probeDelayMs?: number;
  /** Merged over the default AgentInfo: `{protocol_version: "1.0"}`, an extra field, coaching capabilities... */
  info?: Record<string, unknown>;
  /** Status of `GET /v1/info` (default 200). */
  infoStatus?: number;
  coaching?: CoachingBehaviour;
  /** Replace fields of one candidate of the correct answer (e.g. a say with tool calls, a custom memory). */
  candidate?: (input: AgentInput, candidateIndex: number) => Partial<AgentOutput>;
  /** Last word on the answer body: receives the (edited) candidates and the request, returns what is sent. */
  transform?: (outputs: AgentOutput[], request: AgentRequest) => unknown;
}

/**
 * Behaviour chosen per request: receives the recorded request and its index among the requests to the same
 * path (0 for the first `/v1/responses`), e.g. `(r, i) => (i === 0 ? { status: 503 } : {})`.
 */
export type BehaviourFn = (req: RecordedRequest, indexOnPath: number) => FakeBehaviour;

export interface FakeAgentOptions {
  /** Used in agent_id, in says and in memory.seen_by; default "fake". */
  name?: string;
  /** Default 0: the OS chooses a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  behaviour?: FakeBehaviour | BehaviourFn;
  /** Serve HTTPS with these options (cert, key, ...); the url is then https://. */
  https?: HttpsOptions;
}

export interface FakeAgent {
  readonly url: string;
  readonly port: number;
  readonly name: string;
  /** Every request received, in arrival order (probes included: filter on `path`). */
  readonly requests: RecordedRequest[];
  /** The requests to one path, e.g. `requestsTo('/v1/responses')`. */
  requestsTo(path: string): RecordedRequest[];
  /** The AgentInfo currently served (the default merged with a static behaviour's `info`). */
  readonly info: Record<string, unknown>;
  /** Replace the whole behaviour; `setBehaviour({})` is the correct agent again. */
  setBehaviour(b: FakeBehaviour | BehaviourFn): void;
  /** `/v1/responses` requests being handled now, and the most seen at once. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** Forget recorded requests and maxInFlight (behaviour and coaching sessions are kept). */
  reset(): void;
  /** Stop listening and drop every connection (hanging ones included); resolves when the server is closed. */
  close(): Promise<void>;
  /** Crash: destroy every socket immediately and stop listening, like a killed process. */
  kill(): void;
}

/** The slow agent of `delayMs` / `probeDelayMs`: a delay that is the behaviour under test, not a wait. */
function sleep(ms: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    // A client that gives up (timeout) closes the socket: stop waiting so close() is not held by timers.
    res.once('close', done);
    function done(): void {
      clearTimeout(t);
      res.off('close', done);
      resolve();
    }
  });
}

function defaultStatusBody(status: number): unknown {
  if (status === 422) {
    return { detail: [{ type: 'value_error', loc: ['body'], msg: 'Value error, rejected by the fake agent', input: null }] };
  }
  if (status === 503) return { detail: 'not ready' };
  if (status === 429) return { detail: 'too many requests' };
  return { detail: STATUS_CODES[status] ?? 'error' };
}

function sendStatus(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (status === 204 || status === 304) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  sendJson(res, status, body === undefined ? defaultStatusBody(status) : body, headers);
}

/** Start a fake agent; resolves once it listens. */
export async function startFakeAgent(opts: FakeAgentOptions = {}): Promise<FakeAgent> {
  const name = opts.name ?? 'fake';
  const requests: RecordedRequest[] = [];
  const perPath = new Map<string, number>();
  const sockets = new Set<Socket>();
  const sessions = new Map<string, string>();
  let behaviour: FakeBehaviour | BehaviourFn = opts.behaviour ?? {};
  let inFlight = 0;
  let maxInFlight = 0;

  const baseInfo = inferenceOnlyInfo(`fake-${name}`, '0.0.0-test');
  const infoFor = (b: FakeBehaviour): Record<string, unknown> => ({ ...baseInfo, ...(b.info ?? {}) });

  function correctOutputs(request: AgentRequest, b: FakeBehaviour): AgentOutput[] {
    return candidateSlots(request).map(({ input, index }) => {
      const base = { request_id: request.request_id, source_id: input.id, candidate_index: index };
      if (b.errorCandidates) {
        const over = typeof b.errorCandidates === 'object' ? b.errorCandidates : {};
        const error: AgentError = { code: 'model_error', message: `${name} failed`, component: 'model', ...over };
        return { ...base, status: 'error', memory: input.memory, internal_steps: [{ agent: name }], output: null, error };
      }
      const out: AgentOutput = {
        ...base,
        status: 'completed',
        // Spread, not Object.assign: an own `__proto__` key in memory must stay data.
        memory: { ...input.memory, seen_by: name },
        internal_steps: [{ agent: name }],
        output: { say: `${name}:${idText(input.id)}:${index}`, tool_calls: [] },
        error: null,
      };
      return b.candidate ? { ...out, ...b.candidate(input, index) } : out;
    });
  }

  function editOutputs(outputs: AgentOutput[], request: AgentRequest, b: FakeBehaviour): unknown {
    let out = outputs;
    if (b.malformedCandidate !== undefined && out[b.malformedCandidate]) {
      out[b.malformedCandidate] = { ...out[b.malformedCandidate]!, status: 'completed', output: null, error: null };
    }
    if (b.wrongRequestId) out = out.map((o) => ({ ...o, request_id: `${o.request_id}-wrong` }));
    if (b.reverse) out = [...out].reverse();
    if (b.missing) out = out.slice(0, -1);
    if (b.extra) {
      const last = request.inputs[request.inputs.length - 1];
      out = [
        ...out,
        {
          request_id: request.request_id,
          source_id: last?.id ?? 0,
          candidate_index: last?.num_outputs ?? 0,
          status: 'completed',
          memory: { seen_by: name },
          internal_steps: [],
          output: { say: `${name}:extra`, tool_calls: [] },
          error: null,
        },
      ];
    }
    if (b.duplicate && out.length > 0) out = [out[0]!, out[0]!, ...out.slice(1)];
    return b.transform ? b.transform(out, request) : out;
  }

  async function responses(rec: RecordedRequest, res: ServerResponse, b: FakeBehaviour): Promise<void> {
    if (b.hang) return; // the response is never written; close()/kill() or the client ends it
    if (b.delayMs) await sleep(b.delayMs, res);
    if (res.destroyed) return;
    if (b.interim === 100) res.writeContinue();
    else if (b.interim === 102) res.writeProcessing();
    else if (b.interim === 103) res.writeEarlyHints({ link: '</x>; rel=preload' });
    if (b.reset) {
      res.socket?.destroy();
      return;
    }
    const headers = b.headers ?? {};
    if (b.status !== undefined) return sendStatus(res, b.status, b.statusBody, headers);
    if (b.garbage) {
      const text = typeof b.garbage === 'string' ? b.garbage : '<html>this is not json';
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.end(text);
      return;
    }
    // A correct agent validates like FastAPI would.
    const parsed = parseBody(rec.raw);
    if (!parsed.ok) return send422(res, parsed.issues);
    const v = validateAgentRequest(parsed.value);
    if (!v.ok) return send422(res, v.issues);
    const body = editOutputs(correctOutputs(v.request, b), v.request, b);
    if (b.closeMidBody) {
      const text = stringifyExact(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      // Flush part of the body first so the client has started reading a 200 when the connection dies.
      res.write(text.slice(0, Math.max(1, Math.floor(text.length / 2))), () => res.socket?.destroy());
      return;
    }
    sendJson(res, 200, body, headers);
  }

  function coachingResponse(body: JsonObject, c: CoachingBehaviour): unknown {
    if (c.response !== undefined) return typeof c.response === 'function' ? c.response(body) : c.response;
    const points = Array.isArray(body.reinjection_points) ? body.reinjection_points : [];
    const first: unknown = points[0];
    const pointId = isJsonObject(first) ? (first.id ?? first.reinjection_point_id) : first;
    const proposals =
      typeof pointId === 'string' || typeof pointId === 'number'
        ? [{ reinjection_point_id: pointId, extra_keys: { coaching: { kind: 'replace_say', text: `${name}: done.` } } }]
        : [];
    return { request_id: body.request_id, status: 'corrected', proposals, reason: `corrected by ${name}`, logs: [] };
  }

  async function coaching(rec: RecordedRequest, res: ServerResponse, b: FakeBehaviour): Promise<void> {
    const c = b.coaching ?? {};
    if (b.delayMs) await sleep(b.delayMs, res);
    if (res.destroyed) return;
    const session = /^\/v1\/coaching\/sessions\/([^/]+)$/.exec(rec.path);
    if (session) {
      const runId = decodeURIComponent(session[1]!);
      if (rec.method === 'PUT') {
        if (c.sessionStatus !== undefined) return sendStatus(res, c.sessionStatus, undefined);
        const prev = sessions.get(runId);
        if (prev !== undefined && prev !== rec.raw) {
          return sendJson(res, 409, { detail: `session ${runId} exists with another configuration` });
        }
        sessions.set(runId, rec.raw);
        return sendStatus(res, 204, undefined);
      }
      if (rec.method === 'DELETE') {
        sessions.delete(runId);
        return sendStatus(res, c.deleteStatus ?? 204, undefined);
      }
      return sendJson(res, 405, { detail: 'Method Not Allowed' });
    }
    if (rec.method !== 'POST') return sendJson(res, 405, { detail: 'Method Not Allowed' });
    if (c.coachStatus !== undefined && c.coachStatus !== 200) return sendStatus(res, c.coachStatus, undefined);
    const parsed = parseBody(rec.raw);
    if (!parsed.ok) return send422(res, parsed.issues);
    if (!isJsonObject(parsed.value)) {
      return send422(res, [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: parsed.value }]);
    }
    const runId = parsed.value.run_id;
    if ((c.requireSession ?? true) && (typeof runId !== 'string' || !sessions.has(runId))) {
      return sendJson(res, 404, { detail: `unknown coaching session ${String(runId)}` });
    }
    sendJson(res, 200, coachingResponse(parsed.value, c));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const time = Date.now();
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    const raw = await readBody(req, 1 << 30);
    let body: unknown;
    if (raw.length > 0) {
      const p = parseBody(raw);
      body = p.ok ? p.value : undefined;
    }
    const rec: RecordedRequest = { method, path, headers: req.headers, raw, body, time };
    requests.push(rec);
    const index = perPath.get(path) ?? 0;
    perPath.set(path, index + 1);
    const b = typeof behaviour === 'function' ? behaviour(rec, index) : behaviour;

    if (path === '/v1/responses' && method === 'POST') return responses(rec, res, b);
    if (path === '/health' && method === 'GET') {
      if (b.probeDelayMs) await sleep(b.probeDelayMs, res);
      const status = b.health ?? 200;
      return sendStatus(res, status, status === 200 ? { status: 'ready' } : { detail: 'not ready' });
    }
    if (path === '/v1/info' && method === 'GET') {
      if (b.probeDelayMs) await sleep(b.probeDelayMs, res);
      return sendStatus(res, b.infoStatus ?? 200, infoFor(b));
    }
    if (path === '/v1/coaching' || path.startsWith('/v1/coaching/sessions/')) return coaching(rec, res, b);
    sendJson(res, 404, { detail: 'Not Found' });
  }

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const counted = req.url?.split('?')[0] === '/v1/responses';
    if (counted) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      // 'close' fires once whether the answer finished or the socket died, so the count cannot drift.
      res.once('close', () => inFlight--);
    }
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { detail: 'Internal Server Error' });
      else res.destroy();
    });
  };
  const server = opts.https === undefined ? createServer(listener) : createHttpsServer(opts.https, listener);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });

  const host = opts.host ?? '127.0.0.1';
  const port = await listenOn(server, opts.port ?? 0, host);
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server.close();
    for (const s of sockets) s.destroy();
  };

  return {
    url: `${opts.https === undefined ? 'http' : 'https'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    name,
    requests,
    requestsTo: (p) => requests.filter((r) => r.path === p),
    get info() {
      return infoFor(typeof behaviour === 'function' ? {} : behaviour);
    },
    setBehaviour(b) {
      behaviour = b;
    },
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    reset() {
      requests.length = 0;
      perPath.clear();
      maxInFlight = inFlight;
    },
    close() {
      // Hanging requests would hold a graceful close forever; a test helper must always tear down.
      stop();
      return closed;
    },
    kill() {
      stop();
    },
  };
}
