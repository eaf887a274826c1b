/**
 * HTTP/1.x for what fetch cannot do: spoken byte by byte over a plain TCP socket (a client that sends its whole
 * body before it reads anything, as python's http.client does, an HTTP/1.0 request, an `Expect` header), or over
 * a node:http Agent whose keep-alive sockets the test looks at, or a large or chunked body written in pieces.
 */
import { request, type Agent, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  /** The status line's code; 0 when nothing readable came back. */
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The first socket error while sending (EPIPE, ECONNRESET), if any. */
  sendError?: string;
  /** Everything received, as text. */
  raw: string;
}

/** Parse one HTTP/1.x answer (the first one when a 1xx came before it is skipped). */
export function parseAnswer(raw: string): Omit<RawAnswer, 'sendError' | 'raw'> {
  let text = raw;
  for (;;) {
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) return { status: 0, headers: {}, body: '' };
    const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
    const status = Number(statusLine!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    if (status >= 100 && status < 200) {
      text = text.slice(end + 4);
      continue;
    }
    return { status, headers, body: text.slice(end + 4) };
  }
}

/** Whether `raw` holds a whole answer: its content-length of body read (an answer without one ends at close). */
function complete(raw: string): boolean {
  const a = parseAnswer(raw);
  const length = Number(a.headers['content-length']);
  return a.status !== 0 && Number.isFinite(length) && Buffer.byteLength(a.body) >= length;
}

/**
 * Send `head` (the request line and headers, without the blank line), then `body` in 64 KiB writes honouring
 * backpressure, and only then read the answer: until it is complete (content-length), the server closes,
 * or `idleMs` passes without data (a server that answers nothing).
 */
export async function sendThenRead(url: string, head: string, body: Buffer | string, idleMs = 10_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.pause();
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let sendError: string | undefined;
  socket.on('error', (err: NodeJS.ErrnoException) => (sendError ??= err.code ?? err.message));
  const write = (chunk: Buffer | string): Promise<void> =>
    new Promise((resolve) => {
      if (socket.destroyed) return resolve();
      if (socket.write(chunk)) return resolve();
      const done = (): void => {
        socket.off('drain', done).off('close', done);
        resolve();
      };
      socket.once('drain', done).once('close', done);
    });
  await write(`${head}\r\n\r\n`);
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  for (let i = 0; i < bytes.length && sendError === undefined && !socket.destroyed; i += 65536) await write(bytes.subarray(i, i + 65536));
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve) => {
    let timer = setTimeout(resolve, idleMs);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      clearTimeout(timer);
      if (complete(Buffer.concat(chunks).toString())) return resolve();
      timer = setTimeout(resolve, idleMs);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.resume();
  });
  socket.destroy();
  const raw = Buffer.concat(chunks).toString();
  return { ...parseAnswer(raw), raw, ...(sendError === undefined ? {} : { sendError }) };
}

/**
 * One request on `agent`'s connections (a keep-alive agent whose `freeSockets` the test watches); the answer
 * and its whole body. A POST body is sent as JSON.
 */
export function requestOn(agent: Agent, url: string, body?: string): Promise<{ res: IncomingMessage; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json' };
    const req = request(url, { method: body === undefined ? 'GET' : 'POST', agent, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ res, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * POST `body` (bytes, sent as they are) on a fresh connection, written in 1 MiB pieces as a client streams a large
 * body (the test process never copies it whole); chunked when `chunked`, else with its content-length.
 */
export function postBytes(url: string, body: Buffer, opts: { path?: string; chunked?: boolean } = {}): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: opts.path ?? '/v1/responses',
        method: 'POST',
        agent: false,
        headers: opts.chunked === true ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    for (let at = 0; at < body.length; at += 1 << 20) req.write(body.subarray(at, at + (1 << 20)));
    req.end();
  });
}

/** POSTs `body` to /v1/responses on a raw socket that reads nothing (paused) until the test resumes or destroys it. */
export function postNeverReading(url: string, body: string): Socket {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  socket.on('error', () => undefined);
  socket.pause();
  socket.write(`POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return socket;
}
