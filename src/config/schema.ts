/** Every config key and its default, once (docs/configuration.md); unknown keys are errors at every level. */
import { z } from 'zod';
import { DEFAULT_MAX_JSON_DEPTH, MAX_JSON_DEPTH_CEILING } from '../protocol/json/json-depth.js';
import { DEFAULT_MAX_MEMORY_KEY_REPEATS } from '../protocol/request/protocol-walker.js';

const positive = z.number().positive('must be greater than 0');
/** All-digit names are refused: JS objects list integer-like keys first, which would reorder members. */
const name = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "." or "-"')
  .refine((s) => !/^\d+$/.test(s), 'a name needs at least one non-digit character');
const httpUrlLike = (example: string): z.ZodURL =>
  z.url({
    protocol: /^https?$/,
    error: (iss) =>
      iss.code === 'invalid_type' ? 'expected a URL string' : `must be an http:// or https:// URL, e.g. ${example}`,
  });
const httpUrl = httpUrlLike('http://127.0.0.1:8001').transform((u) => u.replace(/\/+$/, ''));

/** Agent calls take from a millisecond (a cache) to minutes (a reasoning model): three buckets per decade. */
export const DEFAULT_LATENCY_BUCKETS_S = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
];

/** `host:port` or `[v6]:port`, else undefined. */
export function parseHostPort(s: string): { host: string; port: number } | undefined {
  const m = /^\[([0-9A-Fa-f:.]+)\]:(\d{1,5})$/.exec(s) ?? /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(s);
  const [, host, digits] = m ?? [];
  if (host === undefined || digits === undefined) return undefined;
  const port = Number(digits);
  return port <= 65535 ? { host, port } : undefined;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

const backendTlsSchema = z.strictObject({
  ca: z.string().min(1).optional(),
  cert: z.string().min(1).optional(),
  key: z.string().min(1).optional(),
  servername: z.string().min(1).optional(),
  reject_unauthorized: z.boolean().default(true),
}).refine((t) => (t.cert === undefined) === (t.key === undefined), { message: 'set both "cert" and "key", or neither' });

const serverTlsSchema = z.strictObject({
  cert: z.string().min(1),
  key: z.string().min(1),
  ca: z.string().min(1).optional(),
  request_cert: z.boolean().default(false),
  reject_unauthorized: z.boolean().default(true),
}).refine((t) => !t.request_cert || t.ca !== undefined, { message: 'request_cert needs "ca" (the CA client certificates are checked against)', path: ['ca'] });

export function mbToBytes(mb: number): number {
  return Math.floor(mb * 1024 * 1024);
}

export const DEFAULT_MAX_RESPONSE_MB = 256;

/** BENCH waits 360 s and aborts its run on a timeout (docs/limits-and-edges.md#deadlines). */
export const CLIENT_WAIT_S = 360;
const DEFAULT_REQUEST_TIMEOUT_S = 330;
const DEFAULT_BACKEND_TIMEOUT_S = 300;

const backendSchema = z
  .strictObject({
    url: httpUrl.optional(),
    urls: z.array(httpUrl).min(1).optional(),
    timeout_s: positive.default(DEFAULT_BACKEND_TIMEOUT_S),
    connect_timeout_s: positive.default(5),
    max_in_flight: z.number().int().positive().optional(),
    queue_timeout_s: positive.optional(),
    headers: z.record(z.string(), z.string()).default({}),
    eject_after_failures: z.number().int().positive().default(3),
    max_response_mb: positive.default(DEFAULT_MAX_RESPONSE_MB),
    tls: backendTlsSchema.optional(),
  })
  .refine((b) => (b.url === undefined) !== (b.urls === undefined), {
    message: 'a backend needs exactly one of "url" or "urls"',
  })
  // zod runs no transform after a failed refinement: `url` is set here whenever `urls` is not.
  .transform((b) => ({ ...b, urls: b.urls ?? (b.url === undefined ? [] : [b.url]) }));

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'expected a string, number, boolean or null',
});

/** Operators that must all hold: one YAML map cannot repeat a key, so `{ glob: "a*", not: "ab" }` combines two. */
const operatorsSchema = z
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

const conditionSchema = z.union([z.string(), z.number(), z.boolean(), z.null(), operatorsSchema], {
  error: 'expected a plain value (string, number, boolean, null) or an operator object (in, glob, exists, contains, not, regex)',
});

const INPUT_PATH = /^(attributes|extra_keys)(\.[^\s.]+)+$/;
const inputPath = z.string().regex(INPUT_PATH, 'expected a dot path into the first input: attributes.<path> or extra_keys.<path> (e.g. attributes.scenario)');

const MATCH_KEY = /^(instruction_type|tools|robots|(attributes|extra_keys|memory)(\.[^\s.]+)+|header\.[A-Za-z0-9_-]+)$/;

const members = z
  .record(name, positive)
  .refine((m) => Object.keys(m).length > 0, 'needs at least one member');

const routeSchema = z
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
    assign_by: inputPath.optional(),
    all_arms_ready: z.boolean().default(false),
    experiment: z
      .strictObject({
        name: z.string().min(1).max(200).optional(),
        primary: z.enum(['tool_success', 'outcome']).optional(),
        control: name.optional(),
      })
      .optional(),
    cache: z.enum(['deterministic', 'always', 'off']).default('off'),
  })
  .refine((r) => [r.backend, r.split, r.ensemble].filter((x) => x !== undefined).length === 1, {
    message: 'a route needs exactly one of "backend", "split" or "ensemble"',
  })
  .refine((r) => r.assign_by === undefined || r.split !== undefined, {
    message: 'assign_by applies to a split route only',
    path: ['assign_by'],
  })
  .refine((r) => !r.all_arms_ready || r.split !== undefined, {
    message: 'all_arms_ready applies to a split route only',
    path: ['all_arms_ready'],
  })
  .refine((r) => r.experiment?.control === undefined || Object.hasOwn(r.split ?? r.ensemble ?? {}, r.experiment.control), {
    message: 'experiment.control must name one of the route\'s split or ensemble members',
    path: ['experiment', 'control'],
  });

const experimentsSchema = z
  .strictObject({
    primary: z.enum(['tool_success', 'outcome']).default('tool_success'),
    sequential: z
      .strictObject({
        planned_trajectories: z.number().int().positive().default(200),
        burn_in: z.number().int().min(2).default(20),
      })
      .prefault({}),
    stratify_by: inputPath.optional(),
    max_strata: z.number().int().min(1).max(1000).default(20),
    max_keys: z.number().int().positive().default(10_000),
    max_trajectories: z.number().int().positive().default(50_000),
    index_ttl_s: positive.default(30 * 24 * 3600),
    outcomes_max: z.number().int().positive().default(10_000),
    outcomes_max_bytes: z.number().int().positive().default(4 * 1024 * 1024),
    earlier_max: z.number().int().min(0).default(10),
    hash_candidates_max: z.number().int().positive().default(64),
    export_max_trajectories: z.number().int().positive().default(10_000),
    salt: z.string().default('magma-gateway'),
    tag_secret: z.string().min(16, 'use at least 16 characters (e.g. the output of: openssl rand -hex 32)').optional(),
    snapshot_interval_s: positive.default(60),
    snapshot_points: z.number().int().positive().max(100_000).default(1440),
  })
  .prefault({});

/** The request metrics' `client` label for a request without a client (docs/operations.md#client-keys). */
const RESERVED_CLIENT_NAMES: readonly string[] = ['anonymous', 'unauthorized'];

const clientSchema = z.strictObject({
  /** Visible ASCII without spaces: it must travel in an address (`/k/<key>`) and in a header. */
  key: z
    .string({ error: 'expected a string: the key, e.g. "${TEAM_A_KEY}"' })
    .min(1, 'must not be empty (is its environment variable set and non-empty?)')
    .regex(/^[\x21-\x7e]+$/, 'use visible ASCII characters without spaces (e.g. the output of: openssl rand -hex 32)'),
  max_batches_in_flight: z.number().int().positive().optional(),
  max_candidates_per_minute: z.number().int().positive().optional(),
  max_wait_s: z.number().min(0, 'must be 0 (no waiting) or more').default(30),
  agents: z.array(z.string().min(1)).min(1, 'list at least one agent (or remove "agents" to allow every agent)').optional(),
});

const clientsSchema = z.record(name, clientSchema).superRefine((clients, ctx) => {
  if (Object.keys(clients).length === 0) {
    ctx.addIssue({ code: 'custom', message: 'at least one client (or remove "clients" to serve without keys)' });
  }
  const byKey = new Map<string, string>();
  for (const [n, { key }] of Object.entries(clients)) {
    if (RESERVED_CLIENT_NAMES.includes(n)) {
      ctx.addIssue({ code: 'custom', path: [n], message: `"${n}" is reserved (the metrics' label for requests without a client): choose another name` });
    }
    const first = byKey.get(key);
    if (first === undefined) byKey.set(key, n);
    else ctx.addIssue({ code: 'custom', path: [n, 'key'], message: `the same key as clients.${first}: every client needs its own key` });
  }
});

export const DEFAULT_MEMORY_KEY = '_gateway';

/** The agent of the top-level `routes`, its metrics' `agent` label (docs/routing.md#virtual-agents). */
export const ROOT_AGENT = 'default';

/** Not the package version: BENCH refuses to resume a run whose agent_version changed (docs/cache.md#resume-a-run). */
export const DEFAULT_AGENT_VERSION = '1';

const identitySchema = z
  .strictObject({
    agent_id: z.string().min(1).default('magma-gateway'),
    agent_version: z.string().min(1).optional(),
  })
  .prefault({});

/** Below fastify's 100-character path parameters, so the batch front and fastify answer every URL alike. */
const MAX_AGENT_NAME_LENGTH = 64;

const agentName = name
  .max(MAX_AGENT_NAME_LENGTH, `at most ${MAX_AGENT_NAME_LENGTH} characters (it is a URL path segment)`)
  .refine((s) => s !== ROOT_AGENT, `"${ROOT_AGENT}" is the metric label of the top-level routes (the agent at /): choose another name`)
  .refine((s) => !/^\.+$/.test(s), 'a name of only dots is not a usable URL path segment');

const virtualAgentSchema = z.strictObject({
  agent: z
    .strictObject({
      agent_id: z.string().min(1).optional(),
      agent_version: z.string().min(1).optional(),
    })
    .prefault({}),
  memory_key: z.string().min(1).optional(),
  routes: z
    .array(routeSchema, { error: (iss) => (iss.input === undefined ? 'required: the agent\'s routes, a list like the top-level "routes"' : undefined) })
    .min(1),
});

export const configSchema = z.strictObject({
  server: z
    .strictObject({
      host: z.string().default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8888),
      body_limit_mb: positive.default(64),
      body_discard_mb: z.number().min(0).default(256),
      body_discard_s: z.number().min(0).default(30),
      max_outputs_per_input: z.number().int().positive().default(1024),
      max_json_depth: z.number().int().positive().max(MAX_JSON_DEPTH_CEILING).default(DEFAULT_MAX_JSON_DEPTH),
      max_memory_key_repeats: z.number().int().positive().default(DEFAULT_MAX_MEMORY_KEY_REPEATS),
      max_candidates_per_batch: z.number().int().positive().default(4096),
      max_answer_mb: positive.default(128),
      stream_answers_over_mb: positive.default(64),
      memory_budget_mb: positive.optional(),
      admission_timeout_s: positive.default(120),
      memory_shadow_share: z.number().gt(0).max(1).default(0.25),
      max_validation_errors: z.number().int().positive().default(100),
      headers_timeout_s: positive.default(60),
      body_timeout_s: positive.default(60),
      keep_alive_timeout_s: positive.default(72),
      max_connections: z.number().int().positive().default(1024),
      drain_timeout_s: positive.default(30),
      tls_handshake_timeout_s: positive.default(10),
      tls: serverTlsSchema.optional(),
    })
    .prefault({}),
  agent: identitySchema,
  memory_key: z.string().min(1).default(DEFAULT_MEMORY_KEY),
  request_timeout_s: positive.default(DEFAULT_REQUEST_TIMEOUT_S),
  probe_interval_s: positive.default(5),
  probe_timeout_s: positive.default(2),
  probe_max_response_kb: positive.default(1024),
  eject_max_s: positive.default(300),
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
      listen: z
        .string()
        .refine((s) => parseHostPort(s) !== undefined, 'expected "host:port" (e.g. 127.0.0.1:9901, [::1]:9901), port 0-65535')
        .optional(),
      token: z.string().optional(),
      protect_metrics: z.boolean().default(false),
      recent_batches: z.number().int().min(0).max(100_000).default(200),
      allowed_hosts: z
        .array(z.string().regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'expected a host name or address without a port (admin.example, 10.0.0.5, [fd00::5])'))
        .max(100)
        .default([]),
      batch_inputs_kept: z.number().int().min(0).max(10_000).default(100),
      pulse_interval_s: z.number().min(1).max(3600).default(10),
      pulse_points: z.number().int().min(1).max(10_000).default(360),
    })
    .superRefine((a, ctx) => {
      const at = a.listen === undefined ? undefined : parseHostPort(a.listen);
      if (at !== undefined && !isLoopback(at.host) && (a.token === undefined || a.token === '')) {
        ctx.addIssue({
          code: 'custom',
          path: ['listen'],
          message: `admin.listen ${a.listen} is reachable beyond this host: set a non-empty admin.token, or listen on 127.0.0.1`,
        });
      }
    })
    .prefault({}),
  metrics: z
    .strictObject({
      latency_buckets_s: z
        .array(positive)
        .min(1)
        .refine((b) => b.every((v, i) => i === 0 || v > (b[i - 1] ?? -Infinity)), 'must be strictly ascending')
        .default(() => [...DEFAULT_LATENCY_BUCKETS_S]),
    })
    .prefault({}),
  state: z
    .strictObject({
      redis: z
        .strictObject({
          url: z.string().min(1),
          key_prefix: z.string().default('magma-gw:'),
          options: z.record(z.string(), z.unknown()).default({}),
        })
        .optional(),
      replay_ttl_s: z.number().min(0).default(600),
      replay_max_bytes: z.number().int().positive().default(mbToBytes(16)),
      replay_cache_mb: z.number().positive().default(16),
      lease_s: positive.default(30),
      counters_ttl_s: positive.default(30 * 24 * 3600),
      index_max_entries: z.number().int().positive().default(200_000),
    })
    .prefault({}),
  tracing: z
    .strictObject({
      otlp_endpoint: httpUrlLike('http://127.0.0.1:4318/v1/traces').optional(),
      sample_ratio: z.number().min(0).max(1).default(1),
      service_name: z.string().min(1).default('magma-gateway'),
      headers: z.record(z.string(), z.string()).default({}),
      export_timeout_s: positive.default(10),
      export_interval_s: positive.default(5),
      max_queue_size: z.number().int().positive().default(2048),
      max_export_batch_size: z.number().int().positive().default(512),
    })
    .refine((t) => t.max_export_batch_size <= t.max_queue_size, {
      message: 'max_export_batch_size must not exceed max_queue_size',
      path: ['max_export_batch_size'],
    })
    .prefault({}),
  cache: z
    .strictObject({
      max_mb: positive.default(256),
      ttl_s: positive.default(7 * 24 * 3600),
      max_entry_mb: positive.default(16),
      shared_across_clients: z.boolean().default(false),
    })
    .optional(),
  clients: clientsSchema.optional(),
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  backends: z.record(name, backendSchema).refine((b) => Object.keys(b).length > 0, 'at least one backend'),
  /** May be left out when `agents` names one (route-problems.ts requires one or the other). */
  routes: z.array(routeSchema).default([]),
  experiments: experimentsSchema,
  agents: z
    .record(agentName, virtualAgentSchema)
    .default({})
    .transform((agents) =>
      Object.fromEntries(Object.entries(agents).map(([n, a]) => [n, { ...a, agent: { ...a.agent, agent_id: a.agent.agent_id ?? n } }])),
    ),
});

export type GatewayConfig = z.output<typeof configSchema>;
export type RouteConfig = GatewayConfig['routes'][number];
export type Condition = z.output<typeof conditionSchema>;
export type ClientsConfig = NonNullable<GatewayConfig['clients']>;
export type Scalar = string | number | boolean | null;
