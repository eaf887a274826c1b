/**
 * The monitoring stack (docker-compose.yml, Dockerfile, .dockerignore, config/prometheus.yml, config/grafana/**)
 * cannot be started here (no Docker engine), so this test reads those files (stack-files.ts) and checks that
 * they agree with each other and with the gateway: every file they name exists, every service, port and probe
 * they wire together matches, and the gateway config they run loads. dashboard-prometheus.test.ts runs the
 * dashboard's queries on a real Prometheus.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { posix } from 'node:path';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { loadConfigFile } from '../../src/config/load.js';
import { compose, DASHBOARD, dashboard, exists, execForm, expressions, must, panels, readData, readText, repoPath, stages, type Service } from './stack-files.js';

const PROMETHEUS = 'config/prometheus.yml';
const DATASOURCES = 'config/grafana/provisioning/datasources/prometheus.yml';
const PROVIDERS = 'config/grafana/provisioning/dashboards/dashboards.yml';
const services = compose.services;
const svc = (name: string): Service => must(services[name], `service ${name}`);
const gatewaySvc = svc('gateway');
const build = must(stages.find((s) => s.from.getBuildStage() === 'build'), 'the build stage').image;
const runtime = must(stages.at(-1), 'a stage').image;
const workdir = runtime.getInstructions().filter((i) => i.getKeyword() === 'WORKDIR').at(-1)?.getArgumentsContent() ?? '/';
const prometheus = readData(PROMETHEUS, z.looseObject({
  global: z.looseObject({ scrape_interval: z.string(), scrape_timeout: z.string() }),
  scrape_configs: z.array(z.looseObject({ metrics_path: z.string().default('/metrics'), static_configs: z.array(z.looseObject({ targets: z.array(z.string()) })) })),
}));

/** Short port syntax: `"8888:8888"`, `"127.0.0.1:9901:9901"`. */
const published = (s: Service): { host: string; container: number }[] =>
  s.ports.map((p) => ({ host: p.slice(0, p.lastIndexOf(':')), container: Number(p.slice(p.lastIndexOf(':') + 1)) }));
const listens = (s: Service): number[] => [...published(s).map((p) => p.container), ...s.expose.map(Number)];
/** Short volume syntax: `./repo/path:/container/path[:ro]` (a bind mount) or `name:/path`. */
const mounts = (s: Service): { source: string; target: string; bind: boolean }[] =>
  s.volumes.map((v) => {
    const [source = '', target = ''] = v.split(':');
    return { source: source.replace(/^\.\//, ''), target, bind: /^[./]/.test(source) };
  });
const flag = (args: readonly string[], name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'redis:': 6379 };
const urlPort = (u: URL): number => Number(u.port || DEFAULT_PORTS[u.protocol]);
const healthPort = (test: readonly string[] | string | undefined): number =>
  Number(/https?:\/\/[^/:\s'"]+:(\d+)\/health/.exec([test ?? ''].flat().join(' '))?.[1]);
const UNITS_S: Record<string, number> = { ms: 0.001, s: 1, m: 60 };
const durationS = (d: string): number => Number(/^\d+/.exec(d)?.[0]) * (UNITS_S[/[a-z]+$/.exec(d)?.[0] ?? ''] ?? NaN);

/** The command a service runs, the image's ENTRYPOINT and CMD filled in (compose drops CMD with a new entrypoint). */
function argv(s: Service): string[] {
  if (s.image !== gatewaySvc.image) return [...(s.entrypoint ?? []), ...(s.command ?? [])];
  return [...(s.entrypoint ?? execForm(runtime, 'ENTRYPOINT')), ...(s.command ?? (s.entrypoint ? [] : execForm(runtime, 'CMD')))];
}

/** The repo file behind a path of the runtime container: a bind mount of the service, else a COPY of the image. */
function repoFileOf(s: Service, path: string): string | undefined {
  const abs = posix.resolve(workdir, path);
  const under = (dir: string): string | undefined => (abs === dir ? '' : abs.startsWith(`${dir}/`) ? abs.slice(dir.length + 1) : undefined);
  const candidates = [
    ...mounts(s).filter((m) => m.bind).map((m) => [m.source, m.target] as const),
    ...runtime.getCOPYs().filter((c) => !c.getFromFlag()).map((c) => c.getArguments().map((a) => a.getValue())),
  ];
  for (const [src, dest] of candidates) {
    const rest = under(posix.resolve(workdir, dest ?? ''));
    if (src !== undefined && rest !== undefined) return posix.join(src, rest);
  }
  return undefined;
}

/** .dockerignore as Docker reads the simple forms it uses: a path or glob covers what is under it; `**` spans folders. */
const ignorePatterns = readText('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
const ignored = (path: string): boolean =>
  ignorePatterns.reduce((out, raw) => {
    const glob = raw.replace(/^!/, '').replace(/\/$/, '').split('**/').map((p) => p.replace(/[.+^$()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'));
    return new RegExp(`^${glob.join('(?:.*/)?')}(?:/.*)?$`).test(path) ? !raw.startsWith('!') : out;
  }, false);

const gatewayArgs = argv(gatewaySvc);
const configFile = must(repoFileOf(gatewaySvc, must(flag(gatewayArgs, '--config'), 'the gateway\'s --config')), 'the repo file of the gateway config');
// Compose passes only the service's environment to the gateway; ${VAR} references must resolve with it.
const config = loadConfigFile(repoPath(configFile), gatewaySvc.environment);
const port = Number(flag(gatewayArgs, '--port') ?? config.server.port);
const adminPort = Number(must(config.admin.listen, 'admin.listen').split(':').at(-1));

describe('monitoring stack files', () => {
  it('the gateway command names a config file of the repo that the gateway loads', () => {
    assert.deepEqual(gatewayArgs.slice(0, 2), ['node', 'dist/src/cli.js']);
    assert.deepEqual(Object.keys(config.backends).sort(), ['actor', 'talker']);
    assert.deepEqual(config.routes.map((r) => [r.name, r.match === undefined]), [['ensemble', false], ['ab', true]]);
  });

  it('every build context, Dockerfile, bind-mounted file and named volume the compose file names exists', () => {
    for (const [name, s] of Object.entries(services)) {
      if (s.build) assert.ok(exists(posix.join(s.build.context, s.build.dockerfile)), `${name}: ${s.build.dockerfile}`);
      for (const m of mounts(s)) assert.ok(m.bind ? exists(m.source) : m.source in compose.volumes, `${name}: volume ${m.source}`);
    }
  });

  it('every depends_on names a service, and a health condition a service with a healthcheck', () => {
    assert.deepEqual(Object.keys(services).sort(), ['actor', 'gateway', 'grafana', 'jaeger', 'prometheus', 'redis', 'talker']);
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(s.depends_on)) {
        assert.ok(condition !== 'service_healthy' || svc(dep).healthcheck, `${name} waits for ${dep} to be healthy: no healthcheck`);
        assert.ok(dep in services, `${name} depends on unknown service ${dep}`);
      }
    }
    assert.deepEqual(Object.entries(gatewaySvc.depends_on).map(([d, c]) => `${d} ${c.condition}`).sort(), ['actor service_healthy', 'jaeger service_started', 'redis service_healthy', 'talker service_healthy']);
  });

  it('the Dockerfile builds with npm, runs as node, and everything it copies is in the build context', () => {
    assert.deepEqual(stages.map((s) => s.from.getImage()), ['node:24-slim', 'node:24-slim']);
    const runs = (i: typeof build): string => i.getInstructions().filter((x) => x.getKeyword() === 'RUN').map((x) => x.getArgumentsContent()).join('\n');
    assert.match(runs(build), /npm ci\b[\s\S]*npm run build\b/);
    assert.match(runs(runtime), /npm ci\b[^\n]*--omit=dev/);
    const copies = runtime.getCOPYs().map((c) => [c.getFromFlag() ? `--from=${c.getFromFlag()?.getValue()}` : [], c.getArguments().map((a) => a.getValue())].flat().join(' '));
    assert.ok(copies.includes('--from=build /app/dist ./dist'), 'the runtime copies dist/ from the build stage');
    assert.ok(copies.includes('package.json package-lock.json ./'), 'package.json is next to dist/ (the gateway reads its version from it)');
    assert.ok(copies.includes('config ./config'), 'the runtime copies config/');
    // node started plainly: the gateway sets its V8 heap growth itself, and no malloc variable is needed (docs/performance.md#v8-flags).
    assert.deepEqual(execForm(runtime, 'ENTRYPOINT'), ['node', 'dist/src/cli.js']);
    assert.deepEqual(runtime.getENVs().flatMap((e) => e.getProperties().map((p) => p.getName())), ['NODE_ENV']);
    assert.ok(!Object.keys(gatewaySvc.environment).some((k) => k.startsWith('MALLOC_')), 'compose sets no malloc variable');
    assert.equal(runtime.getInstructions().filter((i) => i.getKeyword() === 'USER').at(-1)?.getArgumentsContent(), 'node');
    assert.ok(exists('src/cli.ts'), 'dist/src/cli.js is compiled from src/cli.ts');

    assert.ok(ignored('node_modules') && ignored('demo/node_modules') && ignored('dist'), 'host node_modules/ and dist/ stay out of the image');
    const sources = stages.flatMap((s) => s.image.getCOPYs().filter((c) => !c.getFromFlag()).flatMap((c) => c.getArguments().slice(0, -1).map((a) => a.getValue())));
    for (const src of sources) assert.ok(exists(src) && (src === '.' || !ignored(src)), `COPY source ${src} is in the build context`);
    // What the build compiles must reach the build context: tsconfig's inputs and the lock file.
    const { include } = readData('tsconfig.json', z.looseObject({ include: z.array(z.string()) }));
    assert.ok(include.includes('src') && include.includes('demo'));
    for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', ...include]) assert.ok(!ignored(f), `the build needs ${f}`);
    // npm run build also bundles the console (docs/console.md) from console/ with this script.
    for (const f of ['console', 'scripts/build-console.mjs']) assert.ok(exists(f) && !ignored(f), `the build needs ${f}`);
  });

  it('the gateway listens where compose, the Dockerfile, the healthchecks and Prometheus look', () => {
    assert.ok(!/^(127\.|localhost$|::1$)/.test(config.server.host), 'a container must listen beyond loopback');
    assert.equal(port, config.server.port, 'a --port on the command line agrees with server.port');
    assert.deepEqual(published(gatewaySvc), [{ host: '8888', container: port }, { host: `127.0.0.1:${adminPort}`, container: adminPort }], 'the admin port is published on the host\'s loopback only');
    assert.ok(config.admin.token, 'admin.token is set (from GATEWAY_ADMIN_TOKEN)');
    const exposed = runtime.getInstructions().filter((i) => i.getKeyword() === 'EXPOSE').flatMap((i) => i.getArguments().map((a) => Number(a.getValue())));
    assert.deepEqual(exposed, [port, adminPort]);
    assert.equal(healthPort(runtime.getHEALTHCHECKs()[0]?.getArgumentsContent() ?? ''), port, 'the image HEALTHCHECK probes server.port');
    assert.equal(healthPort(gatewaySvc.healthcheck?.test), port);
    for (const [name, backend] of Object.entries(config.backends)) {
      for (const u of backend.urls.map((x) => new URL(x))) {
        assert.ok(listens(svc(u.hostname)).includes(urlPort(u)), `backend ${name}: ${u.hostname} listens on ${urlPort(u)}`);
        assert.equal(gatewaySvc.depends_on[u.hostname]?.condition, 'service_healthy', `the gateway waits for ${u.hostname}`);
      }
    }
    const redis = new URL(must(config.state.redis, 'state.redis (the stack shares state through Redis)').url);
    assert.match(svc(redis.hostname).image, /^redis:/);
    assert.ok(listens(svc(redis.hostname)).includes(urlPort(redis)));
  });

  it("the gateway's tracing endpoint is the compose trace viewer's OTLP/HTTP port, and its UI is published", () => {
    const endpoint = must(config.tracing.otlp_endpoint, 'the compose gateway exports traces (tracing.otlp_endpoint)');
    const u = new URL(endpoint);
    const viewer = svc(u.hostname);
    assert.match(viewer.image, /^jaegertracing\/all-in-one:\d+\.\d+\.\d+$/, 'Jaeger all-in-one, a pinned version');
    assert.equal(urlPort(u), 4318, 'OTLP/HTTP');
    assert.equal(u.pathname, '/v1/traces', 'the OTLP/HTTP traces path (the exporter posts to the URL as given)');
    assert.ok(listens(viewer).includes(4318), `${u.hostname} does not declare port 4318`);
    assert.equal(viewer.environment.COLLECTOR_OTLP_ENABLED, 'true', 'Jaeger receives OTLP');
    assert.ok(published(viewer).some((p) => p.container === 16686), 'the Jaeger UI on :16686');
    assert.equal(config.tracing.service_name, 'magma-gateway');
  });

  it('the demo agents run compiled demo/agents sources of the gateway image on all interfaces, on the ports their healthchecks probe', () => {
    const agents = Object.entries(services).filter(([, s]) => argv(s).some((a) => a.startsWith('dist/demo/agents/')));
    assert.deepEqual(agents.map(([n]) => n).sort(), ['actor', 'talker']);
    for (const [name, s] of agents) {
      const [node, script = '', ...args] = argv(s);
      assert.equal(node, 'node', name);
      assert.equal(s.image, gatewaySvc.image, `${name} runs the gateway's image`);
      assert.ok(exists(script.replace(/^dist\//, '').replace(/\.js$/, '.ts')), `${name}: the source of ${script}`);
      assert.equal(flag(args, '--host'), '0.0.0.0', `${name} must listen beyond loopback for the gateway to reach it`);
      const port = Number(flag(args, '--port'));
      assert.ok(listens(s).includes(port) && healthPort(s.healthcheck?.test) === port, `${name}: port ${port} declared and probed`);
    }
  });

  it('Prometheus reads config/prometheus.yml and scrapes the gateway service on server.port at /metrics', () => {
    const prom = svc('prometheus');
    const configAt = must(prom.command?.find((a) => a.startsWith('--config.file='))?.slice('--config.file='.length), '--config.file');
    assert.ok(mounts(prom).some((m) => m.bind && m.source === PROMETHEUS && m.target === configAt), `${PROMETHEUS} is mounted at ${configAt}`);
    assert.ok(listens(prom).includes(9090));
    assert.ok(durationS(prometheus.global.scrape_timeout) <= durationS(prometheus.global.scrape_interval));
    const targets = prometheus.scrape_configs.flatMap((job) => job.static_configs.flatMap((sc) => sc.targets.map((t) => ({ job, t }))));
    for (const { t } of targets) {
      const [host = '', p] = t.split(':');
      assert.ok(listens(svc(host)).includes(Number(p)), `scrape target ${t}`);
    }
    assert.deepEqual(targets.filter(({ t }) => t.startsWith('gateway:')).map(({ job, t }) => `${t}${job.metrics_path}`), [`gateway:${port}/metrics`]);
    assert.ok(!config.admin.protect_metrics, 'Prometheus scrapes /metrics without a token');
  });

  it('Grafana provisions the Prometheus data source and the dashboard folder it mounts', () => {
    const grafana = svc('grafana');
    const mountOf = (target: string): string | undefined => mounts(grafana).find((m) => m.bind && m.target === target)?.source;
    assert.equal(mountOf('/etc/grafana/provisioning'), 'config/grafana/provisioning', 'provisioning at Grafana\'s default path');
    const { datasources } = readData(DATASOURCES, z.object({ datasources: z.array(z.looseObject({ type: z.string(), uid: z.string(), url: z.url(), jsonData: z.looseObject({ timeInterval: z.string() }) })) }));
    assert.equal(datasources.length, 1);
    const ds = datasources[0]!;
    assert.deepEqual([ds.type, ds.uid, new URL(ds.url).hostname], ['prometheus', 'prometheus', 'prometheus']);
    assert.ok(listens(svc('prometheus')).includes(urlPort(new URL(ds.url))));
    assert.equal(ds.jsonData.timeInterval, prometheus.global.scrape_interval, 'timeInterval = scrape_interval');

    const { providers } = readData(PROVIDERS, z.object({ providers: z.array(z.looseObject({ options: z.object({ path: z.string() }) })).length(1) }));
    const folder = must(mountOf(providers[0]!.options.path), `the dashboard folder ${providers[0]!.options.path}`);
    assert.ok(readdirSync(repoPath(folder)).some((f) => posix.join(folder, f) === DASHBOARD), `${DASHBOARD} is in ${folder}`);

    const env = grafana.environment;
    assert.deepEqual([env.GF_AUTH_ANONYMOUS_ENABLED, env.GF_AUTH_ANONYMOUS_ORG_ROLE], ['true', 'Viewer']);
    assert.match(env.GF_SECURITY_ADMIN_PASSWORD ?? '', /^\$\{[A-Z_]+:-[^}]+\}$/, 'admin password from the environment, with a default');
    const home = must(env.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH, 'the home dashboard');
    assert.ok(exists(posix.join(must(mountOf(posix.dirname(home)), home), posix.basename(home))), `home dashboard ${home} is a mounted file`);
  });

  it('every dashboard panel, query and variable reads the provisioned data source by uid', () => {
    const uid = (ds: unknown): unknown => (typeof ds === 'object' && ds !== null && 'uid' in ds ? ds.uid : ds);
    for (const p of panels.filter((x) => x.type !== 'row')) {
      assert.equal(uid(p.datasource), 'prometheus', `panel "${p.title}"`);
      assert.ok(p.targets.length > 0, `panel "${p.title}" has a query`);
      for (const t of p.targets) assert.ok(t.datasource === undefined || uid(t.datasource) === 'prometheus', `panel "${p.title}" ${t.refId}`);
    }
    for (const v of dashboard.templating.list) assert.equal(uid(v.datasource), 'prometheus', `variable ${v.name}`);
  });

  it('the dashboard covers batches, backends, candidates, errors, fallbacks, replicas up and feedback per arm', () => {
    const all = expressions.map((e) => e.expr).join('\n');
    for (const needle of [
      'magma_gateway_http_request_duration_seconds_bucket{endpoint="/v1/responses"}', 'magma_gateway_store_fallback_active',
      'magma_gateway_store_leases_lost_total', 'magma_gateway_permit_timeouts_total', 'magma_gateway_build_info',
      'magma_gateway_backend_request_duration_seconds_bucket', 'magma_gateway_candidates_total', 'magma_gateway_candidate_errors_total',
      'magma_gateway_fallbacks_total', 'magma_gateway_backend_up', 'magma_gateway_execution_feedback_total',
    ]) {
      assert.ok(all.includes(needle), `no query uses ${needle}`);
    }
    for (const metric of ['magma_gateway_http_request_duration_seconds', 'magma_gateway_backend_request_duration_seconds']) {
      const quantiles = expressions.filter((e) => e.expr.includes(`${metric}_bucket`)).map((e) => /histogram_quantile\(\s*([\d.]+)/.exec(e.expr)?.[1]);
      assert.deepEqual(quantiles.sort(), ['0.5', '0.95', '0.99'], `${metric} p50/p95/p99`);
    }
    assert.match(all, /by \(backend, le\) \(rate\(magma_gateway_backend_request_duration_seconds_bucket/, 'backend latency per backend');
    assert.match(all, /by \(agent, route, backend, outcome\) \([^\n]*magma_gateway_execution_feedback_total/, 'feedback by agent, arm (route, backend) and outcome');
  });

  it('dashboard panels have unique ids and fit the 24-column grid without overlapping', () => {
    assert.equal(dashboard.uid, 'magma-gateway');
    assert.equal(new Set(panels.map((p) => p.id)).size, panels.length);
    dashboard.panels.forEach(({ gridPos: g, title }, i) => {
      assert.ok(g.x >= 0 && g.x + g.w <= 24, `panel "${title}" gridPos`);
      for (const { gridPos: h, title: other } of dashboard.panels.slice(i + 1)) {
        assert.ok(!(g.x < h.x + h.w && h.x < g.x + g.w && g.y < h.y + h.h && h.y < g.y + g.h), `panels "${title}" and "${other}" overlap`);
      }
    });
  });
});
