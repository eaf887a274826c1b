/**
 * What the gateway's layers see of tracing (docs/operations.md#tracing): a span with an explicit parent, and the few
 * things a batch does with one. The batch core, dispatch and coaching talk to this interface only; the
 * OpenTelemetry SDK stays behind it (otel-tracing.ts).
 *
 * With tracing off every span is NOOP_SPAN: a batch then pays one method call per span it would have made, and
 * builds no attribute objects, because callers check `recording` first.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** An attribute value as OpenTelemetry takes it. */
type SpanValue = string | number | boolean | string[] | number[];
export type SpanAttributes = Record<string, SpanValue | undefined>;

export interface TraceSpan {
  /** True when the span is sampled and recorded: only then are attributes and events worth building. */
  readonly recording: boolean;
  /**
   * The W3C traceparent naming this span, for the calls made within it (src/protocol/correlation.ts
   * withTraceparent); undefined when tracing is off, so those calls carry the client's traceparent.
   */
  readonly traceparent: string | undefined;
  /** A client span (a call to a backend) whose parent is this span. */
  client(name: string, attributes?: SpanAttributes): TraceSpan;
  set(attributes: SpanAttributes): void;
  event(name: string, attributes?: SpanAttributes): void;
  /** The span failed: status ERROR with `message`, and `error.type` = `code`. */
  fail(code: string, message?: string): void;
  end(): void;
}

export interface Tracing {
  /** `tracing.otlp_endpoint` is set. */
  readonly enabled: boolean;
  /**
   * A server span, the child of the request's `traceparent` when that is valid (src/protocol/correlation.ts),
   * else the root of a new trace, sampled by `tracing.sample_ratio`.
   */
  server(name: string, headers: IncomingHttpHeaders, attributes?: SpanAttributes): TraceSpan;
  /** Export every span that has ended, now; resolves when that export is over, even when it failed. */
  flush(): Promise<void>;
  /** Flush, then stop: spans that end afterwards are dropped. Bounded by `tracing.export_timeout_s`. */
  shutdown(): Promise<void>;
}

class NoopSpan implements TraceSpan {
  readonly recording = false;
  readonly traceparent = undefined;

  client(): TraceSpan {
    return this;
  }

  set(): void {}

  event(): void {}

  fail(): void {}

  end(): void {}
}

export const NOOP_SPAN: TraceSpan = new NoopSpan();

class NoopTracing implements Tracing {
  readonly enabled = false;

  server(): TraceSpan {
    return NOOP_SPAN;
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export const NOOP_TRACING: Tracing = new NoopTracing();

