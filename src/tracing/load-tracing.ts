/**
 * The tracing a config asks for (docs/operations.md#tracing): the no-op one without `tracing.otlp_endpoint`, else the
 * OpenTelemetry SDK's. The SDK is imported only then, so a gateway with tracing off neither loads nor holds it
 * (a few MB of heap and RSS, and start-up time).
 */
import type { Logger } from '../logging.js';
import type { TracingConfig } from './otel-tracing.js';
import { NOOP_TRACING, type Tracing } from './trace-span.js';

export async function loadTracing(config: TracingConfig, opts: { version: string; log: Logger }): Promise<Tracing> {
  const endpoint = config.otlp_endpoint;
  if (endpoint === undefined) return NOOP_TRACING;
  const otel = await import('./otel-tracing.js');
  return new otel.OtelTracing({ ...config, otlp_endpoint: endpoint }, opts);
}
