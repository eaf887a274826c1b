/**
 * The bench's plain passthrough baseline: fastify + @fastify/http-proxy in front of one backend, defaults
 * otherwise (bodies streamed, not parsed; undici pool of reply-from). What "a proxy that does nothing" costs.
 *
 *   node dist/bench/passthrough.js --upstream http://127.0.0.1:PORT [--port 0]
 *
 * Prints `{"port":N}` on stdout once listening.
 */
import proxy from '@fastify/http-proxy';
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});

async function main(): Promise<void> {
  if (values.upstream === undefined) throw new Error('--upstream is required');
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024, keepAliveTimeout: 120_000 });
  await app.register(proxy, { upstream: values.upstream, prefix: '/', http2: false });
  await app.listen({ host: values.host, port: Number(values.port) });
  const addr = app.server.address() as AddressInfo;
  process.stdout.write(JSON.stringify({ port: addr.port }) + '\n');
  const stop = (): void => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`passthrough: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
