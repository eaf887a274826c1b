/**
 * The gateway's configuration: one zod schema declares every key and its default once (docs/configuration.md).
 * Unknown keys are errors at every level, so a typo never silently changes routing.
 */
import { z } from 'zod';
import { DEFAULT_MAX_JSON_DEPTH, MAX_JSON_DEPTH_CEILING } from '../protocol/json/json-depth.js';

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

/**
 * Default latency buckets: agent calls take from a millisecond (a cache, a stub agent) to minutes (a reasoning
 * model), so 1 ms .. 600 s, about three buckets per decade.
 */
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

/** Loopback only: `localhost`, 127.0.0.0/8, `::1`. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** backends.<name>.tls: how the gateway connects to an agent behind HTTPS (docs/deployment.md#tls). */
const backendTlsSchema = z.strictObject({
  /** PEM file of the CA(s) that signed the agent's certificate; absent = the system's trusted CAs. */
  ca: z.string().min(1).optional(),
  /** PEM files of the gateway's client certificate and key, for an agent that requires one. */
  cert: z.string().min(1).optional(),
  key: z.string().min(1).optional(),
  /** Name checked against the agent's certificate (SNI too); default: the url's host name. */
  servername: z.string().min(1).optional(),
  /** false accepts any certificate (a test lab only). */
  reject_unauthorized: z.boolean().default(true),
}).refine((t) => (t.cert === undefined) === (t.key === undefined), { message: 'set both "cert" and "key", or neither' });

/** server.tls: the agent port serves HTTPS (docs/deployment.md#tls). */
const serverTlsSchema = z.strictObject({
  /** PEM file of the server certificate (with its chain), and of its private key. */
  cert: z.string().min(1),
  key: z.string().min(1),
  /** PEM file of the CA(s) whose client certificates are accepted; with request_cert clients are asked for one. */
  ca: z.string().min(1).optional(),
  /** Ask each client for a certificate (verified against `ca`). */
  request_cert: z.boolean().default(false),
  /** With request_cert: refuse a client without a valid certificate (false: accept it, unverified). */
  reject_unauthorized: z.boolean().default(true),
}).refine((t) => !t.request_cert || t.ca !== undefined, { message: 'request_cert needs "ca" (the CA client certificates are checked against)', path: ['ca'] });

/** The bytes of a `*_mb` config key (a megabyte of 1024 x 1024 bytes). */
export function mbToBytes(mb: number): number {
  return Math.floor(mb * 1024 * 1024);
}

/** `backends.<name>.max_response_mb`'s default, exported so a replica built without a config keeps the same bound. */
export const DEFAULT_MAX_RESPONSE_MB = 256;

/**
 * BENCH waits 360 s for an answer and aborts its whole run on a timeout (docs/limits-and-edges.md#deadlines):
 * the batch deadline's default leaves 30 s to answer with error candidates before that, and a backend's
 * default fits under the batch deadline with time left for a fallback's answer to begin.
 */
export const CLIENT_WAIT_S = 360;
export const DEFAULT_REQUEST_TIMEOUT_S = 330;
export const DEFAULT_BACKEND_TIMEOUT_S = 300;

const backendSchema = z
  .strictObject({
    url: httpUrl.optional(),
    urls: z.array(httpUrl).min(1).optional(),
    /**
     * The whole answer of one sub-request, to its last byte. Under request_timeout_s's default, so that a
     * timed-out attempt still leaves the batch time for a fallback or its error candidates.
     */
    timeout_s: positive.default(DEFAULT_BACKEND_TIMEOUT_S),
    connect_timeout_s: positive.default(5),
    /** Concurrent sub-requests per replica, across all gateway replicas when Redis is configured. */
    max_in_flight: z.number().int().positive().optional(),
    /** How long an excess sub-request may wait for a permit; default: as long as the batch deadline allows. */
    queue_timeout_s: positive.optional(),
    headers: z.record(z.string(), z.string()).default({}),
    /** Consecutive probe or request failures that eject a replica. */
    eject_after_failures: z.number().int().positive().default(3),
    /** Bytes of one answer (inference, shadow, coaching) kept before the call is aborted. */
    max_response_mb: positive.default(DEFAULT_MAX_RESPONSE_MB),
    tls: backendTlsSchema.optional(),
  })
  .refine((b) => (b.url === undefined) !== (b.urls === undefined), {
    message: 'a backend needs exactly one of "url" or "urls"',
  })
  .transform((b, ctx) => {
    const urls = b.urls ?? (b.url === undefined ? undefined : [b.url]);
    // Not reached: zod runs no transform after a failed refinement, and the one above refuses a backend with neither.
    if (urls === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a backend needs exactly one of "url" or "urls"' });
      return z.NEVER;
    }
    return { ...b, urls };
  });

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  error: 'expected a string, number, boolean or null',
});

/**
 * A match condition: a plain scalar means equality; an object of operator keys means those operators, all of
 * which must hold (one YAML map cannot repeat a key, so `{ glob: "a*", not: "ab" }` is how two are combined).
 */
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

/** A dot path into an input's free-form values: what `assign_by` and `experiments.stratify_by` read. */
const INPUT_PATH = /^(attributes|extra_keys)(\.[^\s.]+)+$/;
const inputPath = z.string().regex(INPUT_PATH, 'expected a dot path into the first input: attributes.<path> or extra_keys.<path> (e.g. attributes.scenario)');

const MATCH_KEY = /^(instruction_type|tools|robots|(attributes|extra_keys|memory)(\.[^\s.]+)+|header\.[A-Za-z0-9_-]+)$/;

/** Weighted members of a split or an ensemble, in file order. */
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
    /**
     * A split only: the arm is drawn from this value of a trajectory's first input instead of per trajectory,
     * and the key is the experiment's unit (docs/experiments.md#assigning-by-a-key).
     */
    assign_by: inputPath.optional(),
    /**
     * A split only: /health (of its agent's path and of the gateway root) answers 503 naming the arm while any
     * arm has no ready replica, so a run never starts one-armed (docs/routing.md#a-split-that-needs-every-arm).
     */
    all_arms_ready: z.boolean().default(false),
    /** A split's or an ensemble's experiment (docs/experiments.md): its name, primary metric and control arm. */
    experiment: z
      .strictObject({
        /** Part of the experiment id: a new name starts a new experiment. */
        name: z.string().min(1).max(200).optional(),
        /** Overrides experiments.primary for this route. */
        primary: z.enum(['tool_success', 'outcome']).optional(),
        /** The arm every other arm is compared with; default the first. */
        control: name.optional(),
      })
      .optional(),
    /**
     * The response cache for this route's inputs (docs/cache.md): `deterministic` caches only inputs with
     * `extra_keys.inference_mode: true`, `always` every input; needs the top-level `cache`.
     */
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

/** experiments: how the experiment report is computed (docs/experiments.md#configuration). */
const experimentsSchema = z
  .strictObject({
    /** The metric comparisons rank by: declared up front, never switched when outcomes arrive. */
    primary: z.enum(['tool_success', 'outcome']).default('tool_success'),
    sequential: z
      .strictObject({
        /** K*: the trajectories (both arms) the always-valid boundary is tuned for. */
        planned_trajectories: z.number().int().positive().default(200),
        /** No always-valid result before each arm has this many trajectories. */
        burn_in: z.number().int().min(2).default(20),
      })
      .prefault({}),
    /** Each value of this path of a trajectory's first input is a stratum of the report (docs/experiments.md#strata). */
    stratify_by: inputPath.optional(),
    /** Strata per experiment: the first values seen claim them, later ones go to `other`. */
    max_strata: z.number().int().min(1).max(1000).default(20),
    /** assign_by keys per experiment that are units of their own; trajectories of later keys are left out (counted). */
    max_keys: z.number().int().positive().default(10_000),
    /** Trajectories recorded per experiment (counted, indexed, stored); later ones are left out (counted as such). */
    max_trajectories: z.number().int().positive().default(50_000),
    /** How long trajectory marks, the outcome index and experiment records are kept (Redis keys' TTL too). */
    index_ttl_s: positive.default(30 * 24 * 3600),
    /** Outcomes one POST /gateway/experiments/outcomes may carry. */
    outcomes_max: z.number().int().positive().default(10_000),
    /** Bytes of one outcomes body. */
    outcomes_max_bytes: z.number().int().positive().default(4 * 1024 * 1024),
    /** Earlier experiments listed per route. */
    earlier_max: z.number().int().min(0).default(10),
    /** Trajectories sharing one trace hash that the outcome index keeps (more are counted as unmatched). */
    hash_candidates_max: z.number().int().positive().default(64),
    /** Trajectories per experiment that GET /gateway/experiments/trajectories can list (the first ones). */
    export_max_trajectories: z.number().int().positive().default(10_000),
    /** Mixed into trajectory ids with request_id and input id; the same on every replica. */
    salt: z.string().default('magma-gateway'),
    /**
     * The secret memory tags are signed with (docs/experiments.md#signed-tags), the same on every replica:
     * `${VAR}` reads it from the environment. Absent: MAGMA_GATEWAY_TAG_SECRET, else one shared through Redis, else
     * one per process.
     */
    tag_secret: z.string().min(16, 'use at least 16 characters (e.g. the output of: openssl rand -hex 32)').optional(),
    /** Seconds between two snapshots of the experiment report into the store (one replica writes each). */
    snapshot_interval_s: positive.default(60),
    /** Snapshots kept, the oldest dropped (1440 = a day at one a minute). */
    snapshot_points: z.number().int().positive().max(100_000).default(1440),
  })
  .prefault({});

/**
 * Client names are the `client` label of the request metrics, whose own values for a request without a client
 * are these two (docs/operations.md#client-keys): a client may not take them.
 */
const RESERVED_CLIENT_NAMES: readonly string[] = ['anonymous', 'unauthorized'];

/**
 * clients.<name>: one client (a team, a BENCH or GEN job) and its key (docs/operations.md#client-keys). Messages never
 * quote a key: it is a secret.
 */
const clientSchema = z.strictObject({
  /**
   * The key (`${TEAM_A_KEY}`, read from the environment). Visible ASCII without spaces: it must travel in an
   * address (`/k/<key>`) and in a header.
   */
  key: z
    .string({ error: 'expected a string: the key, e.g. "${TEAM_A_KEY}"' })
    .min(1, 'must not be empty (is its environment variable set and non-empty?)')
    .regex(/^[\x21-\x7e]+$/, 'use visible ASCII characters without spaces (e.g. the output of: openssl rand -hex 32)'),
  /** Batches of this client answered at once; more wait in order (FIFO). Absent: no limit. */
  max_batches_in_flight: z.number().int().positive().optional(),
  /** Candidates (sum of num_outputs) this client may ask per minute, a token bucket refilled continuously. Absent: no limit. */
  max_candidates_per_minute: z.number().int().positive().optional(),
  /** How long a batch over a limit waits for room before it is answered with gateway_overloaded candidates. */
  max_wait_s: z.number().min(0, 'must be 0 (no waiting) or more').default(30),
  /**
   * The agents this key may use: virtual agent names, and `default` for the top-level routes at `/`. Absent:
   * every agent. Any other agent's endpoints answer 403 (GATEWAY_ERR_AGENT_FORBIDDEN).
   */
  agents: z.array(z.string().min(1)).min(1, 'list at least one agent (or remove "agents" to allow every agent)').optional(),
});

/** clients: names (the config's name rule, two reserved) -> keys and limits; absent = no keys asked. */
const clientsSchema = z.record(name, clientSchema).superRefine((clients, ctx) => {
  const names = Object.keys(clients);
  if (names.length === 0) {
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

/** `memory_key`'s default, exported so code that compiles a match without a config uses the same key. */
export const DEFAULT_MEMORY_KEY = '_gateway';

/**
 * The name of the agent the top-level `routes` make, served at `/`: the `agent` label of its metrics, so no
 * virtual agent may take it (docs/routing.md#virtual-agents).
 */
export const ROOT_AGENT = 'default';

/**
 * The `agent_version` `/v1/info` answers when the config sets none, for the default and every virtual agent.
 * A constant, not the package version: BENCH refuses to resume a run whose agent_version changed, and an
 * upgrade of the gateway must not change the identity of the agents behind it (docs/cache.md#resume-a-run).
 */
export const DEFAULT_AGENT_VERSION = '1';

/** `agent` (top level): the identity `/v1/info` answers. */
const identitySchema = z
  .strictObject({
    agent_id: z.string().min(1).default('magma-gateway'),
    agent_version: z.string().min(1).optional(),
  })
  .prefault({});

/**
 * Longest virtual agent name: it is a URL path segment, and fastify's router takes path parameters of at most
 * 100 characters; a bound below that keeps the batch front (http/agent-path.ts) and fastify's router answering every URL alike.
 */
export const MAX_AGENT_NAME_LENGTH = 64;

/**
 * A virtual agent's name: a backend/route name that can also be a URL path segment (`/agents/<name>/...`) and
 * is not the root agent's metric label.
 */
const agentName = name
  .max(MAX_AGENT_NAME_LENGTH, `at most ${MAX_AGENT_NAME_LENGTH} characters (it is a URL path segment)`)
  .refine((s) => s !== ROOT_AGENT, `"${ROOT_AGENT}" is the metric label of the top-level routes (the agent at /): choose another name`)
  .refine((s) => !/^\.+$/.test(s), 'a name of only dots is not a usable URL path segment');

/**
 * `agents.<name>`: another agent served at `/agents/<name>/` (docs/routing.md#virtual-agents), with its own identity,
 * routes and memory key; backends, pools, probes, the store and the retry budget are the gateway's.
 */
const virtualAgentSchema = z.strictObject({
  /** Default agent_id: the agent's name (filled in by the `agents` record below); agent_version: DEFAULT_AGENT_VERSION. */
  agent: z
    .strictObject({
      agent_id: z.string().min(1).optional(),
      agent_version: z.string().min(1).optional(),
    })
    .prefault({}),
  /** Default: the top-level `memory_key`. */
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
      /**
       * After a 413 (or 408) is written, the rest of the body is read and thrown away, up to this many MiB and
       * body_discard_s, before the connection closes (nginx's lingering close): a client that sends its whole
       * body before reading gets the answer instead of a reset (0: close at once).
       */
      body_discard_mb: z.number().min(0).default(256),
      /** Seconds the connection stays open after a 413 for the rest of the body (nginx's lingering_time). */
      body_discard_s: z.number().min(0).default(30),
      /** Cap on num_outputs per input: one request cannot make the gateway build unbounded candidate arrays. */
      max_outputs_per_input: z.number().int().positive().default(1024),
      /** Deepest JSON nesting accepted from clients and backends; deeper would overflow recursive walks. */
      max_json_depth: z.number().int().positive().max(MAX_JSON_DEPTH_CEILING).default(DEFAULT_MAX_JSON_DEPTH),
      /** Cap on the candidates one batch asks for (sum of num_outputs): each becomes an object in memory. */
      max_candidates_per_batch: z.number().int().positive().default(4096),
      /**
       * Cap on the answer a batch can produce, estimated before any backend is called: every candidate (an
       * error candidate too) carries its input's memory, so a small request can ask for a huge answer.
       */
      max_answer_mb: positive.default(128),
      /**
       * A backend answer longer than this (declared or received) that carries the whole batch is forwarded to the
       * client as it arrives instead of held whole: the gateway then holds about one candidate, not the answer.
       */
      stream_answers_over_mb: positive.default(64),
      /**
       * Bytes held for batches at once (docs/memory-budget.md): request bodies, the objects built over them,
       * backend and shadow answers. Absent: derived at start (memory/default-budget.ts) from the cgroup's
       * memory limit, else from V8's heap limit.
       */
      memory_budget_mb: positive.optional(),
      /** Longest a new request waits for room under memory_budget_mb, from its arrival; a 503 after it. */
      admission_timeout_s: positive.default(120),
      /**
       * Share of memory_budget_mb shadow answers may hold together; past it the shadow reading is shed (shadows
       * never answer anyone, and an endless one would otherwise take the whole budget before it is shed).
       */
      memory_shadow_share: z.number().gt(0).max(1).default(0.25),
      /** Problems listed in a 422 detail; the rest are counted in one last entry. */
      max_validation_errors: z.number().int().positive().default(100),
      /** Time to receive a request's headers; 408 after it. */
      headers_timeout_s: positive.default(60),
      /**
       * Time to receive a whole request body (from when it starts being read); 408 after it. A minute moves the
       * default 64 MiB body at about 1 MiB/s, and frees a connection held by a client trickling bytes.
       */
      body_timeout_s: positive.default(60),
      /** An idle keep-alive connection is closed after this (BENCH sends batches minutes apart). */
      keep_alive_timeout_s: positive.default(72),
      /** Open client connections; new ones beyond it are closed at once. */
      max_connections: z.number().int().positive().default(1024),
      /** Longest a shutdown waits for batches in flight before closing every connection. */
      drain_timeout_s: positive.default(30),
      /**
       * Time a client has to finish its TLS handshake (server.tls); the connection is closed after it. A
       * handshaking connection holds a connection slot and is the first evicted (max_connections). Read at start.
       */
      tls_handshake_timeout_s: positive.default(10),
      /** Serve HTTPS on the agent port; absent = plain HTTP. Files are re-read on every reload. */
      tls: serverTlsSchema.optional(),
    })
    .prefault({}),
  agent: identitySchema,
  memory_key: z.string().min(1).default(DEFAULT_MEMORY_KEY),
  request_timeout_s: positive.default(DEFAULT_REQUEST_TIMEOUT_S),
  /** Each replica is probed this long after its previous probe started. */
  probe_interval_s: positive.default(5),
  /** Bounds one whole probe (/health then /v1/info), however slowly the answer comes. */
  probe_timeout_s: positive.default(2),
  /** Bytes of a probe answer (/health, /v1/info) kept before the probe fails. */
  probe_max_response_kb: positive.default(1024),
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
      /**
       * `host:port` (`[::1]:9901` for IPv6) of the admin listener: the admin API and the backend passthrough
       * are served there and nowhere else; absent = not served at all.
       */
      listen: z
        .string()
        .refine((s) => parseHostPort(s) !== undefined, 'expected "host:port" (e.g. 127.0.0.1:9901, [::1]:9901), port 0-65535')
        .optional(),
      token: z.string().optional(),
      protect_metrics: z.boolean().default(false),
      /** Batches `GET /gateway/batches` (the console's Recent batches page) keeps, newest first; 0 keeps none. */
      recent_batches: z.number().int().min(0).max(100_000).default(200),
      /**
       * Host names the admin listener answers besides its own address and the loopback names (a Service's DNS
       * name, a proxy's): any other `Host` is refused 421, so a DNS-rebinding page never reads it.
       */
      allowed_hosts: z
        .array(z.string().regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'expected a host name or address without a port (admin.example, 10.0.0.5, [fd00::5])'))
        .max(100)
        .default([]),
      /** Inputs of each recent batch kept with their own row (id, route, arm, backend, status, cache, error code). */
      batch_inputs_kept: z.number().int().min(0).max(10_000).default(100),
      /** Seconds between two samples of the console's pulse (batches/s, errors/s, overhead, per-backend latency). */
      pulse_interval_s: z.number().min(1).max(3600).default(10),
      /** Samples of the pulse kept, the oldest dropped (the default is one hour at one every 10 s). */
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
  /** Experiment history for the console's chart (docs/console.md). */
  metrics: z
    .strictObject({
      /** Upper bounds of every duration histogram (batches, backend calls), seconds, ascending. */
      latency_buckets_s: z
        .array(positive)
        .min(1)
        .refine((b) => b.every((v, i) => {
          const before = b[i - 1]; // undefined for the first
          return before === undefined || v > before;
        }), 'must be strictly ascending')
        .default(() => [...DEFAULT_LATENCY_BUCKETS_S]),
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
      replay_max_bytes: z.number().int().positive().default(mbToBytes(16)),
      /**
       * Memory this process may spend on stored responses (the memory store, and the Redis store's local
       * fallback); the oldest go first. Redis itself holds the shared copies.
       */
      replay_cache_mb: z.number().positive().default(16),
      lease_s: positive.default(30),
      /**
       * Redis only: experiment counters expire this long after their last increment (docs/experiments.md), so an
       * experiment nobody runs any more does not stay in Redis for good. 30 days.
       */
      counters_ttl_s: positive.default(30 * 24 * 3600),
      /**
       * Entries (idempotency marks, trajectory index, outcome marks) this process keeps for the experiment
       * recorder: the memory store's, and the Redis store's fallback while Redis is down; oldest dropped first.
       */
      index_max_entries: z.number().int().positive().default(200_000),
    })
    .prefault({}),
  /** OpenTelemetry traces (docs/operations.md#tracing): off unless otlp_endpoint is set. */
  tracing: z
    .strictObject({
      /** The collector's OTLP/HTTP traces URL, e.g. http://jaeger:4318/v1/traces; absent = tracing off. */
      otlp_endpoint: z
        .url({
          protocol: /^https?$/,
          error: (iss) =>
            iss.code === 'invalid_type' ? 'expected a URL string' : 'must be an http:// or https:// URL, e.g. http://127.0.0.1:4318/v1/traces',
        })
        .optional(),
      /** Share of new traces recorded; a batch in a client's trace follows that trace's sampled flag. */
      sample_ratio: z.number().min(0).max(1).default(1),
      service_name: z.string().min(1).default('magma-gateway'),
      /** Sent with every export (a collector's API key: `${VAR}`). */
      headers: z.record(z.string(), z.string()).default({}),
      /** One export to the collector, its retries included. */
      export_timeout_s: positive.default(10),
      /** Ended spans wait at most this long before an export (sooner once max_export_batch_size wait). */
      export_interval_s: positive.default(5),
      /** Ended spans waiting for export; past it new spans are dropped. */
      max_queue_size: z.number().int().positive().default(2048),
      max_export_batch_size: z.number().int().positive().default(512),
    })
    .refine((t) => t.max_export_batch_size <= t.max_queue_size, {
      message: 'max_export_batch_size must not exceed max_queue_size',
      path: ['max_export_batch_size'],
    })
    .prefault({}),
  /**
   * The response cache (docs/cache.md): absent = off. In this process by default, in `state.redis` when set
   * (shared by every replica). Read at start: a reload keeps the running one.
   */
  cache: z
    .strictObject({
      /** Bytes of cached answers this process keeps (LRU); with Redis, entries live in Redis and this bounds nothing. */
      max_mb: positive.default(256),
      /** How long an entry is kept after it was stored. */
      ttl_s: positive.default(7 * 24 * 3600),
      /** One input's candidates larger than this are not stored (in memory and in Redis). */
      max_entry_mb: positive.default(16),
      /**
       * With `clients:`, whether every client reads the entries any client caused (docs/cache.md#clients): a hit
       * then tells a client that another sent the same input. Default: each client its own entries.
       */
      shared_across_clients: z.boolean().default(false),
    })
    .optional(),
  /** Client keys and per-client limits (docs/operations.md#client-keys); absent = every agent endpoint open, as without it. */
  clients: clientsSchema.optional(),
  log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  backends: z.record(name, backendSchema).refine((b) => Object.keys(b).length > 0, 'at least one backend'),
  /**
   * The default agent's routes, served at `/`; may be left out when `agents` names at least one agent
   * (route-problems.ts requires one or the other, with the other route invariants).
   */
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
