/**
 * The `tracing` keys of the config (src/config/schema.ts, docs/configuration.md): their defaults, the
 * problems a bad value is stopped with, and their redaction in GET /gateway/config.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { REDACTED, redactConfig } from '../../src/admin/redact.js';
import { ConfigError, parseConfigText } from '../../src/config/load.js';
import { oneBackend } from '../helpers/fixtures.js';

const base = oneBackend({ a: 'http://127.0.0.1:9' });
const load = (tracing?: Record<string, unknown>) =>
  parseConfigText(stringify(tracing === undefined ? base : { ...base, tracing }), 'tracing.yaml', {});

function problemOf(tracing: Record<string, unknown>): string {
  try {
    load(tracing);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  assert.fail('expected a ConfigError');
}

test('without a tracing block: tracing off, and the documented defaults', () => {
  assert.deepEqual(load().tracing, {
    sample_ratio: 1,
    service_name: 'magma-gateway',
    headers: {},
    export_timeout_s: 10,
    export_interval_s: 5,
    max_queue_size: 2048,
    max_export_batch_size: 512,
  });
});

test('an otlp_endpoint that is not an http(s) URL is refused, naming the key', () => {
  assert.match(problemOf({ otlp_endpoint: 'jaeger:4318' }), /tracing\.otlp_endpoint: must be an http:\/\/ or https:\/\/ URL/);
});

test('a sample_ratio outside 0..1 is refused, naming the key', () => {
  assert.match(problemOf({ otlp_endpoint: 'http://jaeger:4318/v1/traces', sample_ratio: 1.5 }), /tracing\.sample_ratio: /);
});

test('a max_export_batch_size over max_queue_size is refused, naming the key', () => {
  const msg = problemOf({ otlp_endpoint: 'http://jaeger:4318/v1/traces', max_queue_size: 10, max_export_batch_size: 11 });
  assert.match(msg, /tracing\.max_export_batch_size: max_export_batch_size must not exceed max_queue_size/);
});

test('GET /gateway/config shows tracing.headers values and the endpoint password redacted', () => {
  const config = load({ otlp_endpoint: 'https://user:pw@collector.example/v1/traces', headers: { authorization: 'Bearer s3cret' } });
  const red = redactConfig(config);
  assert.deepEqual(red.tracing.headers, { authorization: REDACTED });
  assert.equal(red.tracing.otlp_endpoint, `https://user:${REDACTED}@collector.example/v1/traces`);
  assert.doesNotMatch(JSON.stringify(red), /s3cret|:pw@/);
  assert.equal(config.tracing.headers.authorization, 'Bearer s3cret', 'the running config is untouched');
});
