/** The SDK is imported only with tracing on: a gateway without it neither loads nor holds a few MB of heap. */
import type { Logger } from '../logging.js';
import type { TracingConfig } from './otel-tracing.js';
import { NOOP_TRACING, type Tracing } from './trace-span.js';

export async function loadTracing(config: TracingConfig, opts: { version: string; log: Logger }): Promise<Tracing> {
  const endpoint = config.otlp_endpoint;
  if (endpoint === undefined) return NOOP_TRACING;
  const otel = await import('./otel-tracing.js');
  return new otel.OtelTracing({ ...config, otlp_endpoint: endpoint }, opts);
}
