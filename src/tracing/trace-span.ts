/** What the gateway's layers see of tracing (docs/operations.md#tracing); with tracing off every span is NOOP_SPAN. */
import type { IncomingHttpHeaders } from 'node:http';

type SpanValue = string | number | boolean | string[] | number[];
export type SpanAttributes = Record<string, SpanValue | undefined>;

export interface TraceSpan {
  /** Only then are attributes and events worth building. */
  readonly recording: boolean;
  /** Undefined when tracing is off, so the calls made within it carry the client's traceparent. */
  readonly traceparent: string | undefined;
  client(name: string, attributes?: SpanAttributes): TraceSpan;
  set(attributes: SpanAttributes): void;
  event(name: string, attributes?: SpanAttributes): void;
  fail(code: string, message?: string): void;
  end(): void;
}

export interface Tracing {
  readonly enabled: boolean;
  /** The child of the request's `traceparent` when that is valid, else the root of a new trace. */
  server(name: string, headers: IncomingHttpHeaders, attributes?: SpanAttributes): TraceSpan;
  /** Resolves when the export is over, even when it failed. */
  flush(): Promise<void>;
  /** Spans that end afterwards are dropped. Bounded by `tracing.export_timeout_s`. */
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
