/**
 * A real OTLP/HTTP trace receiver on loopback for the tracing tests (docs/operations.md#tracing): a node:http server that
 * takes `POST /v1/traces` with the JSON encoding the gateway's exporter sends (OTLP/HTTP JSON), and keeps every
 * span it received, flattened to plain values. It can also refuse (an HTTP status) or hang (never answer), the
 * collectors the gateway must not be slowed by.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type AttrValue = string | number | boolean | AttrValue[] | null;

export interface ReceivedEvent {
  name: string;
  attributes: Record<string, AttrValue>;
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttrValue>;
  events: ReceivedEvent[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  /** The resource's attributes (service.name, ...). */
  resource: Record<string, AttrValue>;
}

export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;
export const STATUS_ERROR = 2;

export type ReceiverMode = { kind: 'accept' } | { kind: 'refuse'; status: number } | { kind: 'hang' };

export interface OtlpReceiver {
  /** The traces endpoint, e.g. http://127.0.0.1:4711/v1/traces. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  /** Export requests received, whatever the mode answered. */
  readonly requests: number;
  setMode(mode: ReceiverMode): void;
  /** Resolves once the spans received satisfy `check` (checked on every export), or rejects after `timeoutMs`. */
  until(what: string, check: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves at the next export request (of any mode). */
  nextRequest(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
}

interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}

function valueOf(v: OtlpAnyValue): AttrValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return null;
}

function attrs(list: OtlpKeyValue[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of list ?? []) out[kv.key] = valueOf(kv.value);
  return out;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  events?: { name: string; attributes?: OtlpKeyValue[] }[];
  status?: { code?: number; message?: string };
}

interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

/** The spans of one OTLP/JSON export request body. */
export function decodeExport(body: string): ReceivedSpan[] {
  const parsed = JSON.parse(body) as OtlpExport; // the exporter's JSON, decoded field by field below
  const out: ReceivedSpan[] = [];
  for (const rs of parsed.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: attrs(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          resource,
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(mode: ReceiverMode = { kind: 'accept' }): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let requests = 0;
  let current = mode;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
      } else if (current.kind === 'refuse') {
        res.writeHead(current.status, { 'content-type': 'application/json' }).end('{}');
      } else if (current.kind === 'accept') {
        spans.push(...decodeExport(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }
      // hang: no answer; close() destroys the socket.
      for (const w of [...waiters]) w();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : 0;

  function waitUntil(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
    if (ok()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received: ${spans.map((s) => s.name).join(', ')}`));
      }, timeoutMs);
      const check = (): void => {
        if (!ok()) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
    });
  }

  return {
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    get requests() {
      return requests;
    },
    setMode(m) {
      current = m;
    },
    until(what, check, timeoutMs = 5_000) {
      return waitUntil(what, () => check(spans), timeoutMs);
    },
    nextRequest(timeoutMs = 5_000) {
      const seen = requests;
      return waitUntil('an export request', () => requests > seen, timeoutMs);
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}
