/**
 * The monitoring stack (docker-compose.yml, Dockerfile, config/prometheus.yml, config/grafana/**) cannot be
 * started here (no Docker engine), so this test reads those files as data and checks that they agree with each
 * other and with the gateway: every file they name exists, every service and port they wire together matches,
 * the gateway config they run loads, and every dashboard query names a metric (and labels) the gateway exports.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { posix } from 'node:path';
import { before, describe, it } from 'node:test';
import { loadConfigFile } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/schema.js';
import { METRIC_NAMES } from '../../src/metrics.js';
import {
  allPanels,
  argv,
  arr,
  copies,
  datasourceUid,
  dependsOn,
  dockerIgnored,
  dockerignorePatterns,
  environment,
  execForm,
  exists,
  flagValue,
  gatewayCatalog,
  healthcheckPort,
  isObj,
  labelProblems,
  mounts,
  obj,
  parseDockerfile,
  ports,
  readText,
  readYaml,
  repoPath,
  str,
  workdir,
  type MetricInfo,
  type Obj,
  type Panel,
  type Stage,
} from './stack-files.js';

const COMPOSE = 'docker-compose.yml';
const PROMETHEUS = 'config/prometheus.yml';
const DATASOURCES = 'config/grafana/provisioning/datasources/prometheus.yml';
const DASHBOARD_PROVIDERS = 'config/grafana/provisioning/dashboards/dashboards.yml';
const DASHBOARD = 'config/grafana/dashboards/magma-gateway.json';
const DEMO_AGENT = /^dist\/(demo\/agents\/[A-Za-z0-9_-]+)\.js$/;

const compose = obj(readYaml(COMPOSE), COMPOSE);
const services = obj(compose.services, 'services');
const service = (name: string): Obj => obj(services[name], `services.${name}`);
const stages = parseDockerfile(readText('Dockerfile'));
const runtime = stages[stages.length - 1]!;
const prometheus = obj(readYaml(PROMETHEUS), PROMETHEUS);
const dashboard = obj(JSON.parse(readText(DASHBOARD)) as unknown, DASHBOARD);
const panels = allPanels(arr(dashboard.panels, 'panels') as Panel[]);
const variables = arr(obj(dashboard.templating ?? { list: [] }, 'templating').list ?? [], 'templating.list').map((v) =>
  obj(v, 'variable'),
);

/** Every PromQL expression of the dashboard, with where it is. */
const expressions: { where: string; expr: string }[] = panels.flatMap((p) =>
  (p.targets ?? []).filter((t) => typeof t.expr === 'string').map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr! })),
);

/** The build section's context as a repo path; `build: .` or `build: { context: . }`. */
function buildContext(svc: Obj): string | undefined {
  if (svc.build === undefined) return undefined;
  return typeof svc.build === 'string' ? svc.build : str(obj(svc.build, 'build').context ?? '.', 'build.context');
}

/** The repo file a path inside the runtime container comes from: a bind mount first, else a COPY of the image. */
function hostPathOf(svc: Obj, containerPath: string): string | undefined {
  const abs = posix.resolve(workdir(runtime), containerPath);
  const within = (target: string): string | undefined =>
    abs === target ? '' : abs.startsWith(target.replace(/\/$/, '') + '/') ? abs.slice(target.replace(/\/$/, '').length + 1) : undefined;
  for (const m of mounts(svc)) {
    const rest = m.bind ? within(m.target) : undefined;
    if (rest !== undefined) return posix.join(m.source, rest);
  }
  for (const c of copies(runtime).filter((c) => c.from === undefined)) {
    if (c.sources.length !== 1) continue;
    const rest = within(posix.resolve(workdir(runtime), c.dest));
    if (rest !== undefined) return posix.join(c.sources[0]!, rest);
  }
  return undefined;
}

/** The command a service runs, image defaults (ENTRYPOINT/CMD of the runtime stage) filled in. */
function fullCommand(svc: Obj): string[] {
  const imageInstr = (kw: string): string[] => {
    const i = runtime.instructions.filter((x) => x.keyword === kw).pop();
    return i === undefined ? [] : execForm(i.rest) ?? [];
  };
  const built = buildContext(svc) !== undefined || svc.image === service('gateway').image;
  const entrypoint = argv(svc.entrypoint) ?? (built ? imageInstr('ENTRYPOINT') : []);
  // Compose, like `docker run`, drops the image's CMD when the entrypoint is overridden.
  const command = argv(svc.command) ?? (svc.entrypoint === undefined && built ? imageInstr('CMD') : []);
  return [...entrypoint, ...command];
}

/** The TypeScript source of a compiled file: tsconfig has rootDir "." and outDir "dist". */
function sourceOf(distFile: string): string {
  return distFile.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

function containerPorts(svc: Obj): number[] {
  return [...ports(svc).map((p) => p.container), ...((svc.expose as unknown[] | undefined) ?? []).map(Number)];
}

function urlPort(u: URL): number {
  return u.port !== '' ? Number(u.port) : ({ 'http:': 80, 'https:': 443, 'redis:': 6379 } as Record<string, number>)[u.protocol]!;
}

const gatewayArgs = fullCommand(service('gateway'));
const configArg = flagValue(gatewayArgs, '--config') ?? flagValue(gatewayArgs, '-c') ?? environment(service('gateway')).MAGMA_GATEWAY_CONFIG;
let loaded: GatewayConfig | undefined;
/** The config the gateway container loads, validated by the gateway's own loader (loaded once, on first use). */
function gatewayConfig(): GatewayConfig {
  if (loaded !== undefined) return loaded;
  assert.ok(configArg, `the gateway command (${gatewayArgs.join(' ')}) names no --config file`);
  const file = hostPathOf(service('gateway'), configArg);
  assert.ok(file !== undefined && exists(file), `the gateway's config ${configArg} comes from no file of the repo`);
  // Compose passes only the service's environment to the gateway; ${VAR} references must resolve with it.
  loaded = loadConfigFile(repoPath(file), environment(service('gateway')));
  return loaded;
}

describe('monitoring stack files', () => {
  it('the gateway command names a config file of the repo that the gateway loads', () => {
    const config = gatewayConfig();
    assert.deepEqual(Object.keys(config.backends).sort(), ['actor', 'talker']);
    assert.deepEqual(
      config.routes.map((r) => [r.name, r.match === undefined ? 'catch-all' : 'match']),
      [
        ['ensemble', 'match'],
        ['ab', 'catch-all'],
      ],
    );
  });

  it('every file, build context and volume the compose file names exists', () => {
    const named = new Set(Object.keys(isObj(compose.volumes) ? compose.volumes : {}));
    for (const [name, raw] of Object.entries(services)) {
      const svc = obj(raw, name);
      const ctx = buildContext(svc);
      if (ctx !== undefined) {
        assert.ok(exists(ctx), `${name}: build context ${ctx} is missing`);
        const dockerfile = isObj(svc.build) && typeof svc.build.dockerfile === 'string' ? svc.build.dockerfile : 'Dockerfile';
        assert.ok(exists(posix.join(ctx, dockerfile)), `${name}: ${dockerfile} is missing`);
      }
      assert.ok(ctx !== undefined || typeof svc.image === 'string', `${name}: neither build nor image`);
      for (const m of mounts(svc)) {
        if (m.bind) assert.ok(exists(m.source), `${name}: volume source ${m.source} is missing`);
        else assert.ok(named.has(m.source), `${name}: named volume ${m.source} is not declared under volumes:`);
      }
    }
  });

  it('every depends_on names a service, and a health condition a service with a healthcheck', () => {
    for (const [name, raw] of Object.entries(services)) {
      for (const [dep, condition] of dependsOn(obj(raw, name))) {
        assert.ok(dep in services, `${name} depends on unknown service ${dep}`);
        if (condition === 'service_healthy') {
          assert.ok(isObj(service(dep).healthcheck), `${name} waits for ${dep} to be healthy, but ${dep} has no healthcheck`);
        }
      }
    }
    assert.deepEqual(
      [...dependsOn(service('gateway'))].sort(),
      [['actor', 'service_healthy'], ['redis', 'service_healthy'], ['talker', 'service_healthy']],
    );
    for (const required of ['gateway', 'talker', 'actor', 'redis', 'prometheus', 'grafana']) {
      assert.ok(required in services, `service ${required} is missing`);
    }
  });

  it('the Dockerfile builds with npm, runs as node, and everything it copies is in the build context', () => {
    assert.ok(stages.length >= 2, 'a multi-stage build');
    for (const s of stages) assert.equal(s.base, 'node:20-slim');
    const runs = (s: Stage): string => s.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.rest).join('\n');
    const build = stages.find((s) => s.name === copies(runtime).find((c) => c.from !== undefined)?.from);
    assert.ok(build, 'the runtime stage copies from a named build stage');
    assert.match(runs(build), /npm ci\b/);
    assert.match(runs(build), /npm run build\b/);
    assert.match(runs(runtime), /npm ci\b[^\n]*--omit=dev/);
    const fromBuild = copies(runtime).filter((c) => c.from === build.name);
    assert.ok(fromBuild.some((c) => c.sources.some((s) => /^\/app\/dist\/?$/.test(s))), 'the runtime copies dist/');
    const local = copies(runtime).filter((c) => c.from === undefined).flatMap((c) => c.sources);
    assert.ok(local.includes('package.json'), 'package.json is next to dist/ (the gateway reads its version from it)');
    assert.ok(local.some((s) => s.replace(/\/$/, '') === 'config'), 'the runtime copies config/');
    assert.equal(runtime.instructions.filter((i) => i.keyword === 'USER').pop()?.rest, 'node');
    assert.deepEqual(execForm(runtime.instructions.find((i) => i.keyword === 'ENTRYPOINT')!.rest), ['node', 'dist/src/cli.js']);
    assert.ok(exists(sourceOf('dist/src/cli.js')));

    const ignore = dockerignorePatterns(readText('.dockerignore'));
    assert.ok(dockerIgnored(ignore, 'node_modules') && dockerIgnored(ignore, 'dist'), 'host node_modules/ and dist/ stay out of the image');
    for (const s of stages) {
      for (const c of copies(s).filter((c) => c.from === undefined)) {
        for (const src of c.sources) {
          assert.ok(exists(src), `COPY source ${src} is missing`);
          if (src !== '.') assert.ok(!dockerIgnored(ignore, src), `COPY source ${src} is excluded by .dockerignore`);
        }
      }
    }
    // What the build compiles must reach the build context: tsconfig's inputs and the lock file.
    const tsconfig = obj(JSON.parse(readText('tsconfig.json')) as unknown, 'tsconfig.json');
    for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', ...arr(tsconfig.include, 'include').map(String)]) {
      assert.ok(!dockerIgnored(ignore, f), `${f} is excluded by .dockerignore but the build needs it`);
    }
  });

  it('the gateway runs a valid config, listens where compose, the healthchecks and Prometheus look', () => {
    assert.ok(gatewayArgs.join(' ').startsWith('node dist/src/cli.js'), gatewayArgs.join(' '));
    assert.ok(!/^(127\.|localhost$|::1$)/.test(gatewayConfig().server.host), 'a container must listen beyond loopback');
    const port = gatewayConfig().server.port;
    const portFlag = flagValue(gatewayArgs, '--port');
    assert.equal(portFlag === undefined ? port : Number(portFlag), port);
    const admin = gatewayConfig().admin;
    assert.ok(admin.listen, 'the compose gateway serves the admin API on admin.listen');
    const adminPort = Number(admin.listen.slice(admin.listen.lastIndexOf(':') + 1));
    assert.deepEqual(ports(service('gateway')), [
      { published: 8888, container: port },
      { published: adminPort, container: adminPort },
    ]);
    // Published on the host's loopback only; inside the container it listens beyond loopback, with a token.
    assert.ok(
      arr(service('gateway').ports, 'ports').map(String).includes(`127.0.0.1:${adminPort}:${adminPort}`),
      'the admin port is published on 127.0.0.1 only',
    );
    assert.ok(admin.token !== undefined && admin.token !== '', 'admin.token is set (from GATEWAY_ADMIN_TOKEN)');
    assert.ok(!admin.protect_metrics, 'Prometheus scrapes /metrics without a token');
    for (const p of [port, adminPort]) {
      assert.ok(
        runtime.instructions.some((i) => i.keyword === 'EXPOSE' && i.rest.split(/\s+/).includes(String(p))),
        `the Dockerfile exposes ${p}`,
      );
    }
    const imageCheck = runtime.instructions.find((i) => i.keyword === 'HEALTHCHECK');
    assert.equal(healthcheckPort(imageCheck?.rest), port, 'the image HEALTHCHECK probes server.port');
    assert.equal(healthcheckPort(obj(service('gateway').healthcheck, 'healthcheck').test), port);

    const gatewayDeps = dependsOn(service('gateway'));
    for (const [name, backend] of Object.entries(gatewayConfig().backends)) {
      for (const url of backend.urls) {
        const u = new URL(url);
        assert.ok(u.hostname in services, `backend ${name}: ${url} names no compose service`);
        assert.ok(containerPorts(service(u.hostname)).includes(urlPort(u)), `backend ${name}: ${u.hostname} does not listen on ${urlPort(u)}`);
        assert.equal(gatewayDeps.get(u.hostname), 'service_healthy', `the gateway waits for ${u.hostname}`);
      }
    }
    const redis = gatewayConfig().state.redis;
    assert.ok(redis, 'the compose stack shares state through Redis');
    const ru = new URL(redis.url);
    assert.ok(ru.hostname in services && /^redis:/.test(String(service(ru.hostname).image)), `${redis.url} names the redis service`);
    assert.ok(containerPorts(service(ru.hostname)).includes(urlPort(ru)));
  });

  it('the demo agents run compiled demo/agents sources on all interfaces, on the ports their healthchecks probe', () => {
    const agents = Object.entries(services).filter(([, s]) => fullCommand(obj(s, 'service')).some((a) => DEMO_AGENT.test(a)));
    assert.deepEqual(agents.map(([n]) => n).sort(), ['actor', 'talker']);
    for (const [name, raw] of agents) {
      const svc = obj(raw, name);
      const args = fullCommand(svc);
      assert.equal(args[0], 'node', `${name} runs node`);
      assert.equal(svc.image, service('gateway').image, `${name} runs the gateway's image`);
      const script = args.find((a) => DEMO_AGENT.test(a))!;
      assert.ok(exists(sourceOf(script)), `${name}: ${script} compiles from ${sourceOf(script)}, which is missing`);
      const env = environment(svc);
      const host = flagValue(args, '--host') ?? env.HOST ?? '127.0.0.1';
      assert.equal(host, '0.0.0.0', `${name} must listen beyond loopback for the gateway to reach it`);
      const port = Number(flagValue(args, '--port') ?? env.PORT);
      assert.ok(Number.isInteger(port) && port > 0, `${name} has a fixed port`);
      assert.ok(containerPorts(svc).includes(port), `${name} declares port ${port}`);
      assert.equal(healthcheckPort(obj(svc.healthcheck, `${name}.healthcheck`).test), port);
    }
    // The build compiles demo/ (tsconfig) from a context that has it (the Dockerfile copies the whole context).
    const include = arr(obj(JSON.parse(readText('tsconfig.json')) as unknown, 'tsconfig').include, 'include').map(String);
    assert.ok(include.includes('demo') && include.includes('src'));
  });

  it('Prometheus scrapes the gateway service on server.port at /metrics', () => {
    const prom = service('prometheus');
    const configFlag = flagValue(argv(prom.command) ?? [], '--config.file') ?? '/etc/prometheus/prometheus.yml';
    assert.ok(
      mounts(prom).some((m) => m.bind && m.source.replace(/^\.\//, '') === PROMETHEUS && m.target === configFlag),
      `${PROMETHEUS} is mounted at ${configFlag}`,
    );
    assert.ok(ports(prom).some((p) => p.container === 9090));
    const global = obj(prometheus.global ?? {}, 'global');
    const seconds = (d: unknown): number => {
      const m = /^(\d+)(ms|s|m)$/.exec(String(d));
      assert.ok(m, `duration ${String(d)}`);
      return Number(m[1]) * ({ ms: 0.001, s: 1, m: 60 } as Record<string, number>)[m[2]!]!;
    };
    if (global.scrape_timeout !== undefined) assert.ok(seconds(global.scrape_timeout) <= seconds(global.scrape_interval));

    const jobs = arr(prometheus.scrape_configs, 'scrape_configs').map((j) => obj(j, 'scrape_config'));
    const targets = jobs.flatMap((job) =>
      arr(job.static_configs, 'static_configs').flatMap((sc) =>
        arr(obj(sc, 'static_config').targets, 'targets').map((t) => ({ job, target: String(t) })),
      ),
    );
    assert.ok(targets.length > 0);
    for (const { target } of targets) {
      const [host, port] = target.split(':');
      assert.ok(host! in services, `scrape target ${target} names no compose service`);
      assert.ok(containerPorts(service(host!)).includes(Number(port)), `${host} does not listen on ${port}`);
    }
    const gw = targets.filter((t) => t.target.split(':')[0] === 'gateway');
    assert.equal(gw.length, 1, 'one scrape target for the gateway');
    assert.equal(gw[0]!.target, `gateway:${gatewayConfig().server.port}`);
    assert.equal(gw[0]!.job.metrics_path ?? '/metrics', '/metrics');
    assert.ok(!gatewayConfig().admin.protect_metrics, '/metrics is scraped without a token');
  });

  it('Grafana provisions the Prometheus data source and the dashboard folder it mounts', () => {
    const grafana = service('grafana');
    const gm = mounts(grafana);
    const provisioning = gm.find((m) => m.target === '/etc/grafana/provisioning');
    assert.ok(provisioning?.bind, 'provisioning is mounted at Grafana\'s default provisioning path');
    assert.equal(provisioning.source.replace(/^\.\//, ''), 'config/grafana/provisioning');
    assert.ok(exists(DATASOURCES) && exists(DASHBOARD_PROVIDERS));

    const sources = arr(obj(readYaml(DATASOURCES), DATASOURCES).datasources, 'datasources').map((d) => obj(d, 'datasource'));
    assert.equal(sources.length, 1);
    const ds = sources[0]!;
    assert.equal(ds.type, 'prometheus');
    assert.equal(ds.uid, 'prometheus');
    const u = new URL(str(ds.url, 'url'));
    assert.equal(u.hostname, 'prometheus');
    assert.ok(ports(service('prometheus')).some((p) => p.container === urlPort(u)));
    assert.equal(obj(ds.jsonData, 'jsonData').timeInterval, obj(prometheus.global, 'global').scrape_interval, 'timeInterval = scrape_interval');

    const providers = arr(obj(readYaml(DASHBOARD_PROVIDERS), DASHBOARD_PROVIDERS).providers, 'providers').map((p) => obj(p, 'provider'));
    assert.equal(providers.length, 1);
    const path = str(obj(providers[0]!.options, 'options').path, 'options.path');
    const mount = gm.find((m) => m.target === path);
    assert.ok(mount?.bind, `the dashboard folder ${path} is mounted`);
    const dashboardFiles = readdirSync(repoPath(mount.source)).filter((f) => f.endsWith('.json'));
    assert.ok(dashboardFiles.includes(posix.basename(DASHBOARD)), `${DASHBOARD} is in ${mount.source}`);
    assert.equal(posix.join(mount.source, posix.basename(DASHBOARD)).replace(/^\.\//, ''), DASHBOARD);

    const env = environment(grafana);
    assert.equal(env.GF_AUTH_ANONYMOUS_ENABLED, 'true');
    assert.equal(env.GF_AUTH_ANONYMOUS_ORG_ROLE, 'Viewer');
    assert.match(env.GF_SECURITY_ADMIN_PASSWORD ?? '', /^\$\{[A-Z_]+:-[^}]+\}$/, 'admin password from the environment, with a default');
    const home = env.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH;
    if (home !== undefined) {
      const m = gm.find((x) => x.bind && home.startsWith(x.target + '/'));
      assert.ok(m && exists(posix.join(m.source, home.slice(m.target.length + 1))), `home dashboard ${home} is a mounted file`);
    }
  });

  describe('the dashboard', () => {
    let catalog: Map<string, MetricInfo>;
    const targetLabels = new Set(['job', 'instance']);
    before(async () => {
      catalog = await gatewayCatalog();
      for (const job of arr(prometheus.scrape_configs, 'scrape_configs')) {
        for (const sc of arr(obj(job, 'job').static_configs, 'static_configs')) {
          for (const l of Object.keys(obj(obj(sc, 'static_config').labels ?? {}, 'labels'))) targetLabels.add(l);
        }
      }
    });

    it('METRIC_NAMES lists exactly the magma_gateway_* metrics the registry exports', () => {
      const exported = [...catalog.keys()].filter((n) => n.startsWith('magma_gateway_')).sort();
      assert.deepEqual(exported, [...METRIC_NAMES].sort());
    });

    it('matchers and groupings use labels the metrics have (the real Prometheus run cannot see these)', () => {
      assert.ok(expressions.length >= 20, `only ${expressions.length} queries`);
      const problems = expressions.flatMap(({ where, expr }) => labelProblems(expr, catalog, targetLabels).map((p) => `${where}: ${p}`));
      assert.deepEqual(problems, []);
    });

    it('every panel and query reads the provisioned data source by uid', () => {
      const uid = obj(arr(obj(readYaml(DATASOURCES), DATASOURCES).datasources, 'datasources')[0], 'datasource').uid;
      for (const p of panels.filter((x) => x.type !== 'row')) {
        assert.equal(datasourceUid(p.datasource), uid, `panel "${p.title}"`);
        assert.ok((p.targets ?? []).length > 0, `panel "${p.title}" has no query`);
        for (const t of p.targets ?? []) {
          if (t.datasource !== undefined) assert.equal(datasourceUid(t.datasource), uid, `panel "${p.title}" ${t.refId}`);
        }
      }
      for (const v of variables) assert.equal(datasourceUid(v.datasource), uid, `variable ${String(v.name)}`);
    });

    it('covers batches, backends, candidates, errors, fallbacks, replicas up and feedback per arm', () => {
      const all = expressions.map((e) => e.expr).join('\n');
      for (const needle of [
        'magma_gateway_http_request_duration_seconds_bucket{endpoint="/v1/responses"}',
        'magma_gateway_store_fallback_active',
        'magma_gateway_store_leases_lost_total',
        'magma_gateway_permit_timeouts_total',
        'magma_gateway_build_info',
        'magma_gateway_backend_request_duration_seconds_bucket',
        'magma_gateway_candidates_total',
        'magma_gateway_candidate_errors_total',
        'magma_gateway_fallbacks_total',
        'magma_gateway_backend_up',
        'magma_gateway_execution_feedback_total',
      ]) {
        assert.ok(all.includes(needle), `no query uses ${needle}`);
      }
      const quantiles = (metric: string): string[] =>
        expressions
          .map((e) => e.expr)
          .filter((e) => e.includes(`${metric}_bucket`))
          .map((e) => /histogram_quantile\(\s*([\d.]+)/.exec(e)?.[1] ?? '');
      for (const metric of ['magma_gateway_http_request_duration_seconds', 'magma_gateway_backend_request_duration_seconds']) {
        assert.deepEqual(quantiles(metric).sort(), ['0.5', '0.95', '0.99'], `${metric} p50/p95/p99`);
      }
      assert.ok(
        expressions.some((e) => e.expr.includes('magma_gateway_backend_request_duration_seconds_bucket') && /by \(backend, le\)/.test(e.expr)),
        'backend latency per backend',
      );
      assert.ok(
        expressions.some((e) => /magma_gateway_execution_feedback_total/.test(e.expr) && /by \(agent, route, backend, outcome\)/.test(e.expr)),
        'execution feedback by agent, arm (route, backend) and outcome',
      );
    });

    it('panels have unique ids and fit the 24-column grid without overlapping', () => {
      const ids = panels.map((p) => p.id);
      assert.equal(new Set(ids).size, ids.length);
      for (const p of panels) {
        assert.ok(p.gridPos && p.gridPos.x >= 0 && p.gridPos.x + p.gridPos.w <= 24, `panel "${p.title}" gridPos`);
      }
      const top = arr(dashboard.panels, 'panels') as Panel[];
      top.forEach((a, i) =>
        top.slice(i + 1).forEach((b) => {
          const [g, h] = [a.gridPos!, b.gridPos!];
          const overlap = g.x < h.x + h.w && h.x < g.x + g.w && g.y < h.y + h.h && h.y < g.y + g.h;
          assert.ok(!overlap, `panels "${a.title}" and "${b.title}" overlap`);
        }),
      );
      assert.equal(dashboard.uid, 'magma-gateway');
    });

    it('the label check flags a label the metric lacks (so the test above can fail)', () => {
      assert.deepEqual(labelProblems('magma_gateway_backend_up{arm=~".*"}', catalog, targetLabels), ['magma_gateway_backend_up has no label "arm"']);
      assert.deepEqual(labelProblems('sum by (code) (rate(magma_gateway_fallbacks_total[1m]))', catalog, targetLabels), [
        'grouping by "code": magma_gateway_fallbacks_total has no such label',
      ]);
      const good = 'histogram_quantile(0.99, sum by (backend, le) (rate(magma_gateway_backend_request_duration_seconds_bucket{backend=~"$backend", job="x"}[$__rate_interval])))';
      assert.deepEqual(labelProblems(good, catalog, targetLabels), []);
    });
  });
});
