/**
 * The OTLP exporter with its failures in the gateway's log: the SDK reports them only to its process-global
 * diagnostic logger, which the gateway does not install. A dead collector is one line, not one per export.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../logging.js';

/** Without user info: a token in the URL stays out of the log. */
function shown(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(endpoint)';
  }
}

export class WatchedExporter implements SpanExporter {
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
