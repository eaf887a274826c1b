/**
 * The config as `GET /gateway/config` shows it: nothing an operator's screen share could leak. Backend and tracing
 * header values carry API keys; ioredis takes `password`, `sentinelPassword` and TLS keys in Redis `options`.
 */
import type { GatewayConfig } from '../config/schema.js';

export const REDACTED = 'REDACTED';

const SECRET_KEY = /pass|secret|token|auth|cred|^key$|private/i;

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = REDACTED;
    // `redis://token@host`: a lone user name is how some providers pass the secret.
    else if (u.username !== '' && u.protocol.startsWith('redis')) u.username = REDACTED;
    else return url;
    // The serializer adds "/" to an empty path; keep the URL as written otherwise.
    const out = u.toString();
    return out.endsWith('/') && !url.endsWith('/') ? out.slice(0, -1) : out;
  } catch {
    // Not a URL the WHATWG parser takes: blank whatever sits between "//" and "@".
    return url.replace(/\/\/[^/@]*@/, `//${REDACTED}@`);
  }
}

function redactValues(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((h) => [h, REDACTED]));
}

function redactOptions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactOptions);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? REDACTED : redactOptions(v);
  return out;
}

/** The return type is inferred from what is built, so it cannot drift from it. */
export function redactConfig(config: GatewayConfig) {
  const backends = Object.fromEntries(
    Object.entries(config.backends).map(([name, b]) => {
      const url = b.url === undefined ? {} : { url: redactUrl(b.url) };
      return [name, { ...b, ...url, urls: b.urls.map(redactUrl), headers: redactValues(b.headers) }];
    }),
  );
  const { redis, ...state } = config.state;
  const endpoint = config.tracing.otlp_endpoint;
  return {
    ...config,
    tracing: {
      ...config.tracing,
      ...(endpoint === undefined ? {} : { otlp_endpoint: redactUrl(endpoint) }),
      headers: redactValues(config.tracing.headers),
    },
    ...(config.clients === undefined ? {} : { clients: Object.fromEntries(Object.entries(config.clients).map(([n, c]) => [n, { ...c, key: REDACTED }])) }),
    admin: { token: config.admin.token === undefined ? null : REDACTED, protect_metrics: config.admin.protect_metrics },
    backends,
    state: {
      ...state,
      ...(redis === undefined
        ? {}
        : { redis: { url: redactUrl(redis.url), key_prefix: redis.key_prefix, options: redactOptions(redis.options) } }),
    },
  };
}
