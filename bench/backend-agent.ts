/**
 * A fast MAGMA v2.0 backend agent for the bench: plain node:http, precomputed templates, responses built by
 * string concatenation. One process can listen on several ports; each port is one replica with its own serial
 * work queue (a replica works on one sub-request at a time, like a model server), so sharding is measurable.
 *
 *   node dist/bench/backend-agent.js [--ports N] [--base-ms MS] [--per-input-ms MS] [--per-candidate-ms MS]
 *                                    [--internal-kb KB] [--step-kb KB] [--gate N] [--gate-timeout-ms MS]
 *
 * Prints `{"ports":[...]}` on stdout once listening. Behaviour per input (one candidate per requested
 * (input, candidate), source_id = the input's id, in input order then candidate_index):
 * - memory with a `history` list (S2, BENCH-like): memory grown by one agent step (~step-kb KB) and an
 *   internal_steps record of ~internal-kb KB per candidate; the decision is a tool call.
 * - otherwise (S1/S3/S4): memory echoed, internal_steps [], a short `say`.
 * A sub-request takes base-ms + per-input-ms x inputs + per-candidate-ms x candidates (0: answered at once).
 * --gate N holds every answer until N of them wait (all ports together), then sends them all at once: the
 * batches a client sends at once are then all in flight in the proxy in front at the same time, and their
 * answers arrive together. A gate still short of N after --gate-timeout-ms opens anyway (a client that sent
 * fewer must not hang). Answers too long for one string are written as Buffers, with backpressure.
 * GET /bench/stats answers `{requests, inputs, candidates, gateOpened, gateTimedOut}`: the first three for that
 * port, the gate's counts for the process.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { makeResponder, type Chunked } from './lib/agent-response.js';

const { values } = parseArgs({
  options: {
    ports: { type: 'string', default: '1' },
    'base-ms': { type: 'string', default: '0' },
    'per-input-ms': { type: 'string', default: '0' },
    'per-candidate-ms': { type: 'string', default: '0' },
    'internal-kb': { type: 'string', default: '8' },
    'step-kb': { type: 'string', default: '2' },
    gate: { type: 'string', default: '0' },
    'gate-timeout-ms': { type: 'string', default: '60000' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});

const PORTS = Number(values.ports);
const BASE_MS = Number(values['base-ms']);
const PER_INPUT_MS = Number(values['per-input-ms']);
const PER_CANDIDATE_MS = Number(values['per-candidate-ms']);
const INTERNAL_KB = Number(values['internal-kb']);
const STEP_KB = Number(values['step-kb']);
const GATE = Number(values.gate);
const GATE_TIMEOUT_MS = Number(values['gate-timeout-ms']);

interface Replica {
  freeAt: number;
  requests: number;
  inputs: number;
  candidates: number;
}

const respond = makeResponder({ stepKb: STEP_KB, internalKb: INTERNAL_KB, maxStringChars: 32 * 1024 * 1024 });

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function sendChunks(res: ServerResponse, answer: Chunked): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.bytes });
  let i = 0;
  const pump = (): void => {
    while (i < answer.chunks.length) {
      if (!res.write(answer.chunks[i++]!)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
}

const gate = { held: [] as (() => void)[], timer: undefined as NodeJS.Timeout | undefined, opened: 0, timedOut: 0 };

function openGate(byTimeout: boolean): void {
  clearTimeout(gate.timer);
  gate.timer = undefined;
  gate.opened++;
  if (byTimeout) gate.timedOut++;
  for (const reply of gate.held.splice(0)) reply();
}

/** Sends at once without a gate; else holds the answer until the gate opens. */
function gated(reply: () => void): void {
  if (GATE <= 1) return reply();
  gate.held.push(reply);
  if (gate.held.length >= GATE) openGate(false);
  else gate.timer ??= setTimeout(() => openGate(true), GATE_TIMEOUT_MS);
}

const HEALTH = '{"status":"ready"}';
const INFO = JSON.stringify({
  protocol_version: '2.0',
  agent_id: 'bench-agent',
  agent_version: '1.0.0',
  capabilities: { inference: true, coaching: false },
  specialized_coaching: [],
  coaching_resume: false,
  coaching_unavailable_reason: null,
});

function handler(replica: Replica) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    if (req.method === 'GET') {
      if (url === '/health') return send(res, 200, HEALTH);
      if (url === '/v1/info') return send(res, 200, INFO);
      if (url === '/bench/stats') {
        const stats = { requests: replica.requests, inputs: replica.inputs, candidates: replica.candidates, gateOpened: gate.opened, gateTimedOut: gate.timedOut };
        return send(res, 200, JSON.stringify(stats));
      }
      return send(res, 404, '{"detail":"Not Found"}');
    }
    if (req.method !== 'POST' || url !== '/v1/responses') {
      req.resume();
      return send(res, 404, '{"detail":"Not Found"}');
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      const r = respond(text);
      if ('error' in r) {
        send(res, 422, JSON.stringify({ detail: [{ type: 'value_error', loc: ['body'], msg: r.error, input: null }] }));
        return;
      }
      replica.requests++;
      replica.inputs += r.inputs;
      replica.candidates += r.candidates;
      const work = BASE_MS + PER_INPUT_MS * r.inputs + PER_CANDIDATE_MS * r.candidates;
      const reply = 'body' in r ? () => send(res, 200, r.body) : () => sendChunks(res, r);
      if (work <= 0) {
        gated(reply);
        return;
      }
      // One sub-request at a time per replica: this one starts when the previous one is done.
      const now = performance.now();
      const done = Math.max(now, replica.freeAt) + work;
      replica.freeAt = done;
      setTimeout(() => gated(reply), done - now);
    });
  };
}

async function main(): Promise<void> {
  const ports: number[] = [];
  for (let i = 0; i < PORTS; i++) {
    const replica: Replica = { freeAt: 0, requests: 0, inputs: 0, candidates: 0 };
    const server = createServer({ keepAlive: true }, handler(replica));
    server.keepAliveTimeout = 120_000;
    server.headersTimeout = 130_000;
    server.requestTimeout = 0;
    await new Promise<void>((resolve) => server.listen(0, values.host, resolve));
    ports.push((server.address() as AddressInfo).port);
  }
  process.stdout.write(JSON.stringify({ ports }) + '\n');
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
}

main().catch((err: unknown) => {
  process.stderr.write(`backend-agent: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
