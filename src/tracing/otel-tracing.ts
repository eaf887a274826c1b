/**
 * Tracing with the OpenTelemetry JS SDK (docs/operations.md#tracing): one TracerProvider per runtime, so batches
 * still running on an old config end their spans on its provider.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, parseTraceParent, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { GatewayConfig } from '../config/schema.js';
import type { Logger } from '../logging.js';
import { isValidTraceparent } from '../protocol/correlation.js';
import { ATTR_ERROR_TYPE } from './attributes.js';
import type { SpanAttributes, TraceSpan, Tracing } from './trace-span.js';

export type TracingConfig = GatewayConfig['tracing'];

/** Fixed so no OTEL_* variable changes them: a client's request_id or run_id could be megabytes. */
const SPAN_LIMITS = {
  attributeValueLengthLimit: 1024,
  attributeCountLimit: 64,
  eventCountLimit: 128,
  attributePerEventCountLimit: 16,
  linkCountLimit: 0,
  attributePerLinkCountLimit: 0,
};

export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

class OtelSpan implements TraceSpan {
  readonly recording: boolean;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
  ) {
    this.recording = span.isRecording();
  }

  get traceparent(): string {
    return formatTraceparent(this.span.spanContext());
  }

  client(name: string, attributes?: SpanAttributes): TraceSpan {
    const child = this.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, trace.setSpan(ROOT_CONTEXT, this.span));
    return new OtelSpan(this.tracer, child);
  }

  set(attributes: SpanAttributes): void {
    this.span.setAttributes(attributes);
  }

  event(name: string, attributes?: SpanAttributes): void {
    this.span.addEvent(name, attributes);
  }

  fail(code: string, message?: string): void {
    this.span.setAttribute(ATTR_ERROR_TYPE, code);
    this.span.setStatus(message === undefined ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message });
  }

  end(): void {
    this.span.end();
  }
}

/** Without user info: a token in the URL stays out of the log. */
function shown(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(endpoint)';
  }
}

/**
 * The OTLP exporter with its failures in the gateway's log: the SDK reports them only to its process-global
 * diagnostic logger, which the gateway does not install. A dead collector is one line, not one per export.
 */
class WatchedExporter implements SpanExporter {
  private failing = false;
  private readonly endpoint: string;

  constructor(
    private readonly inner: SpanExporter,
    endpoint: string,
    private readonly log: Logger,
  ) {
    this.endpoint = shown(endpoint);
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) {
        if (!this.failing) {
          this.failing = true;
          this.log.warn(
            { endpoint: this.endpoint, spans: spans.length, reason: result.error?.message ?? 'export failed' },
            'trace export failed: spans are dropped until the collector answers (tracing.otlp_endpoint)',
          );
        }
      } else if (this.failing) {
        this.failing = false;
        this.log.info({ endpoint: this.endpoint }, 'trace export works again');
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

export class OtelTracing implements Tracing {
  readonly enabled = true;
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly shutdownMs: number;

  constructor(config: TracingConfig & { otlp_endpoint: string }, opts: { version: string; log: Logger }) {
    const exportTimeoutMs = Math.max(1, Math.round(config.export_timeout_s * 1000));
    this.shutdownMs = exportTimeoutMs + 1000;
    const exporter = new WatchedExporter(
      new OTLPTraceExporter({ url: config.otlp_endpoint, headers: { ...config.headers }, timeoutMillis: exportTimeoutMs }),
      config.otlp_endpoint,
      opts.log,
    );
    this.provider = new BasicTracerProvider({
      resource: defaultResource().merge(
        resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.service_name, [ATTR_SERVICE_VERSION]: opts.version }),
      ),
      // Parent-based: a client's sampled (or unsampled) trace is followed; new traces are kept at the ratio.
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
      spanLimits: SPAN_LIMITS,
      forceFlushTimeoutMillis: this.shutdownMs,
      spanProcessors: [
        new BatchSpanProcessor(exporter, {
          maxQueueSize: config.max_queue_size,
          maxExportBatchSize: config.max_export_batch_size,
          scheduledDelayMillis: Math.max(1, Math.round(config.export_interval_s * 1000)),
          exportTimeoutMillis: exportTimeoutMs,
        }),
      ],
    });
    this.tracer = this.provider.getTracer('magma-gateway', opts.version);
  }

  server(name: string, headers: IncomingHttpHeaders, attributes?: SpanAttributes): TraceSpan {
    const tp = headers['traceparent'];
    const parent = isValidTraceparent(tp) ? parseTraceParent(tp) : null;
    const ctx = parent === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { ...parent, isRemote: true });
    return new OtelSpan(this.tracer, this.tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, ctx));
  }

  /** A failed export is not the caller's failure: the watched exporter has logged it. */
  async flush(): Promise<void> {
    await this.provider.forceFlush().catch(() => undefined);
  }

  /** The SDK bounds each export by export_timeout_s; the timer bounds the whole of it besides, and never holds the process. */
  async shutdown(): Promise<void> {
    await Promise.race([this.provider.shutdown().catch(() => undefined), delay(this.shutdownMs, undefined, { ref: false })]);
  }
}
