/**
 * The gateway's configuration: one zod schema declares every key and its default once (README "Configuration").
 * Unknown keys are errors at every level, so a typo never silently changes routing.
 */
import { z } from 'zod';

const positive = z.number().positive('must be greater than 0');
/**
 * Backend and route names. All-digit names are refused: JS objects list integer-like keys first, which would
 * silently reorder `split`/`ensemble` members, and member order fixes ensemble tie-breaks and candidate order.
 */
const name = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "." or "-"')
  .refine((s) => !/^\d+$/.test(s), 'a name needs at least one non-digit character');
const httpUrl = z
  .url({
    protocol: /^https?$/,
    error: (iss) =>
      iss.code === 'invalid_type' ? 'expected a URL string' : 'must be an http:// or https:// URL, e.g. http://127.0.0.1:8001',
  })
  .transform((u) => u.replace(/\/+$/, ''));

export const backendSchema = z
  .strictObject({
    url: httpUrl.optional(),
    urls: z.array(httpUrl).min(1).optional(),
    timeout_s: positive.default(360),
    connect_timeout_s: positive.default(5),
    /** Concurrent sub-requests per replica, across all gateway replicas when Redis is configured. */
    max_in_flight: z.number().int().positive().optional(),
    /** How long an excess sub-request may wait for a permit; default: as long as the batch deadline allows. */
    queue_timeout_s: positive.optional(),
    headers: z.record(z.string(), z.string()).default({}),
    /** Consecutive probe or request failures that eject a replica. */
    eject_after_failures: z.number().int().positive().default(3),
  })
  .refine((b) => (b.url === undefined) !== (b.urls === undefined), {
    message: 'a backend needs exactly one of "url" or "urls"',
  })
  .transform((b) => ({ ...b, urls: b.urls ?? [b.url as string] }));

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'expected a string, number, boolean or null',
});

/**
 * A match condition: a plain scalar means equality; an object of operator keys means those operators, all of
 * which must hold (one YAML map cannot repeat a key, so `{ glob: "a*", not: "ab" }` is how two are combined).
 */
export const operatorsSchema = z
  .strictObject({
    in: z.array(scalar).optional(),
    glob: z.string().optional(),
    exists: z.boolean().optional(),
    contains: scalar.optional(),
    not: scalar.optional(),
    regex: z.string().optional(),
  })
  .refine((o) => Object.values(o).some((v) => v !== undefined), {
    message: 'an operator object needs at least one of in, glob, exists, contains, not, regex',
  });

export const conditionSchema = z.union([z.string(), z.number(), z.boolean(), z.null(), operatorsSchema], {
  error: 'expected a plain value (string, number, boolean, null) or an operator object (in, glob, exists, contains, not, regex)',
});

const MATCH_KEY = /^(instruction_type|tools|robots|(attributes|extra_keys|memory)(\.[^\s.]+)+|header\.[A-Za-z0-9_-]+)$/;

/** Weighted members of a split or an ensemble, in file order. */
const members = z
  .record(name, positive)
  .refine((m) => Object.keys(m).length > 0, 'needs at least one member');

export const routeSchema = z
  .strictObject({
    name,
    match: z
      .record(
        z
          .string()
          .regex(
            MATCH_KEY,
            'unknown match key: use instruction_type, tools, robots, attributes.<path>, extra_keys.<path>, memory.<path> or header.<name>',
          ),
        conditionSchema,
      )
      .optional(),
    backend: name.optional(),
    split: members.optional(),
    ensemble: members.optional(),
    fallback: z.array(name).default([]),
    shadow: z.array(name).default([]),
    sticky: z.boolean().default(true),
  })
  .refine((r) => [r.backend, r.split, r.ensemble].filter((x) => x !== undefined).length === 1, {
    message: 'a route needs exactly one of "backend", "split" or "ensemble"',
  });

export const configSchema = z.strictObject({
  server: z
    .strictObject({
      host: z.string().default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8888),
      body_limit_mb: positive.default(64),
      /** Cap on num_outputs per input: one request cannot make the gateway build unbounded candidate arrays. */
      max_outputs_per_input: z.number().int().positive().default(1024),
    })
    .prefault({}),
  agent: z
    .strictObject({
      agent_id: z.string().min(1).default('magma-gateway'),
      agent_version: z.string().min(1).optional(),
    })
    .prefault({}),
  memory_key: z.string().min(1).default('_gateway'),
  request_timeout_s: positive.default(600),
  probe_interval_s: positive.default(5),
  probe_timeout_s: positive.default(2),
  /** Longest ejection; the backoff doubles from probe_interval_s up to this. */
  eject_max_s: positive.default(300),
  /** Never eject more than this share of a backend's replicas by failures alone. */
  max_ejected_share: z.number().min(0).max(1).default(0.5),
  shadow_max_in_flight: z.number().int().min(0).default(16),
  retry_budget: z
    .strictObject({
      ratio: z.number().min(0).max(1).default(0.2),
      min: z.number().int().min(0).default(3),
    })
    .prefault({}),
  admin: z
    .strictObject({
      token: z.string().optional(),
      protect_metrics: z.boolean().default(false),
    })
    .prefault({}),
  state: z
    .strictObject({
      redis: z
        .strictObject({
          url: z.string().min(1),
          key_prefix: z.string().default('magma-gw:'),
          /** Passed to ioredis (sentinels, name, tls, commandTimeout, ...); `cluster: true | ClusterOptions` selects Redis Cluster. */
          options: z.record(z.string(), z.unknown()).default({}),
        })
        .optional(),
      /** 0 turns idempotent replay off. */
      replay_ttl_s: z.number().min(0).default(600),
      replay_max_bytes: z.number().int().positive().default(16 * 1024 * 1024),
      /**
       * Memory this process may spend on stored responses (the memory store, and the Redis store's local
       * fallback); the oldest go first. Redis itself holds the shared copies.
       */
      replay_cache_mb: z.number().positive().default(16),
      lease_s: positive.default(30),
    })
    .prefault({}),
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  backends: z.record(name, backendSchema).refine((b) => Object.keys(b).length > 0, 'at least one backend'),
  routes: z.array(routeSchema).min(1),
});

export type ConfigInput = z.input<typeof configSchema>;
export type GatewayConfig = z.output<typeof configSchema>;
export type BackendConfig = GatewayConfig['backends'][string];
export type RouteConfig = GatewayConfig['routes'][number];
export type Condition = z.output<typeof conditionSchema>;
export type Operators = z.output<typeof operatorsSchema>;
export type Scalar = string | number | boolean | null;
