/**
 * The Kubernetes base (deploy/kubernetes/) cannot be applied here (no cluster, no kubectl/kustomize binary), so
 * this test renders it as kustomize would for the fields the base uses (namespace, labels, images), validates
 * every object against the Kubernetes OpenAPI schemas (kubernetes-models), and checks that it agrees with the
 * gateway: the ConfigMap's config loads with the gateway's own loader, its ports are the container's and the
 * Services', the probes hit the right paths, the grace period covers the drain, and the image is the one
 * docker-compose.yml builds.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { parseConfigText } from '../../src/config/load.js';
import { parseHostPort } from '../../src/config/schema.js';

const BASE = join(process.cwd(), 'deploy/kubernetes');

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
function obj(v: unknown, what: string): Obj {
  assert.ok(isObj(v), `${what}: expected a mapping`);
  return v;
}
function arr(v: unknown, what: string): unknown[] {
  assert.ok(Array.isArray(v), `${what}: expected a list`);
  return v;
}

/** Kinds the base may hold, each with its schema-checked model. */
const MODELS: Record<string, (o: Obj) => { validate(): void }> = {
  Namespace: (o) => new Namespace(o as ConstructorParameters<typeof Namespace>[0]),
  ConfigMap: (o) => new ConfigMap(o as ConstructorParameters<typeof ConfigMap>[0]),
  Secret: (o) => new Secret(o as ConstructorParameters<typeof Secret>[0]),
  Deployment: (o) => new Deployment(o as ConstructorParameters<typeof Deployment>[0]),
  Service: (o) => new Service(o as ConstructorParameters<typeof Service>[0]),
  PodDisruptionBudget: (o) => new PodDisruptionBudget(o as ConstructorParameters<typeof PodDisruptionBudget>[0]),
  HorizontalPodAutoscaler: (o) =>
    new HorizontalPodAutoscaler(o as ConstructorParameters<typeof HorizontalPodAutoscaler>[0]),
};

/** Containers of a pod template, with the image rewritten by the kustomization's `images`. */
function containersOf(o: Obj): Obj[] {
  const spec = obj(obj(obj(o.spec, 'spec').template, 'template').spec, 'pod spec');
  return arr(spec.containers, 'containers').map((c, i) => obj(c, `containers[${i}]`));
}

/** What `kustomize build` does with this base's fields (the test refuses any field it does not apply). */
function render(dir: string): Obj[] {
  const k = obj(parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')), 'kustomization.yaml');
  const known = new Set(['apiVersion', 'kind', 'namespace', 'labels', 'commonLabels', 'resources', 'images']);
  for (const key of Object.keys(k)) assert.ok(known.has(key), `kustomization.yaml: field ${key} is not rendered by this test`);
  const out: Obj[] = [];
  for (const file of arr(k.resources, 'resources')) {
    assert.equal(typeof file, 'string');
    const docs = parseAllDocuments(readFileSync(join(dir, file as string), 'utf8'));
    for (const doc of docs) {
      assert.equal(doc.errors.length, 0, `${file as string}: ${doc.errors.map((e) => e.message).join('; ')}`);
      const o = doc.toJS() as unknown;
      if (o === null) continue;
      out.push(obj(o, file as string));
    }
  }
  const labels: Obj = { ...(isObj(k.commonLabels) ? k.commonLabels : {}) };
  for (const l of Array.isArray(k.labels) ? k.labels : []) {
    const entry = obj(l, 'labels[]');
    assert.notEqual(entry.includeSelectors, true, 'labels with includeSelectors are not rendered by this test');
    Object.assign(labels, obj(entry.pairs, 'labels[].pairs'));
  }
  const images = (Array.isArray(k.images) ? k.images : []).map((i) => obj(i, 'images[]'));
  for (const o of out) {
    const meta = obj(o.metadata, `${String(o.kind)} metadata`);
    if (typeof k.namespace === 'string' && o.kind !== 'Namespace') meta.namespace = k.namespace;
    meta.labels = { ...(isObj(meta.labels) ? meta.labels : {}), ...labels };
    if (o.kind !== 'Deployment') continue;
    for (const c of containersOf(o)) {
      const [name, tag] = String(c.image).split(':');
      const rule = images.find((i) => i.name === name);
      if (rule === undefined) continue;
      c.image = `${String(rule.newName ?? name)}:${String(rule.newTag ?? tag ?? 'latest')}`;
    }
  }
  return out;
}

interface Checked {
  objects: Obj[];
}

function find(objects: Obj[], kind: string, name: string): Obj {
  const o = objects.find((x) => x.kind === kind && obj(x.metadata, kind).name === name);
  assert.ok(o !== undefined, `no ${kind} ${name} in the base`);
  return o;
}

/** Every check on one rendered base; throws on the first disagreement. */
function checkBase(objects: Obj[]): Checked {
  for (const o of objects) {
    const model = MODELS[String(o.kind)];
    assert.ok(model !== undefined, `unexpected kind ${String(o.kind)}`);
    model(o).validate();
  }
  const deployment = find(objects, 'Deployment', 'magma-gateway');
  const pod = obj(obj(obj(deployment.spec, 'spec').template, 'template').spec, 'pod spec');
  const [gateway] = containersOf(deployment);
  assert.ok(gateway !== undefined);
  const ports = new Map(
    arr(gateway.ports, 'ports').map((p) => {
      const po = obj(p, 'port');
      return [String(po.name), Number(po.containerPort)] as const;
    }),
  );

  // The config the pods run: mounted from the ConfigMap at the path given on the command line.
  const args = arr(gateway.args, 'args').map(String);
  const configPath = args[args.indexOf('--config') + 1]!;
  const mount = arr(gateway.volumeMounts, 'volumeMounts')
    .map((m) => obj(m, 'mount'))
    .find((m) => configPath.startsWith(`${String(m.mountPath)}/`));
  assert.ok(mount !== undefined, `--config ${configPath} is on no volume mount`);
  const volume = arr(pod.volumes, 'volumes')
    .map((v) => obj(v, 'volume'))
    .find((v) => v.name === mount.name);
  const cmName = String(obj(volume?.configMap, 'volume configMap').name);
  const data = obj(find(objects, 'ConfigMap', cmName).data, 'ConfigMap data');
  const fileName = configPath.slice(String(mount.mountPath).length + 1);
  const text = data[fileName];
  assert.equal(typeof text, 'string', `ConfigMap ${cmName} has no key ${fileName}`);

  // Every ${VAR} the config names comes from the Secret the container takes its environment from.
  const secretName = String(
    obj(
      obj(
        arr(gateway.envFrom, 'envFrom')
          .map((e) => obj(e, 'envFrom'))
          .find((e) => e.secretRef !== undefined),
        'envFrom secretRef',
      ).secretRef,
      'secretRef',
    ).name,
  );
  const secret = find(objects, 'Secret', secretName);
  const secretKeys = Object.keys({ ...obj(secret.stringData ?? {}, 'stringData'), ...obj(secret.data ?? {}, 'data') });
  const env: Record<string, string> = {};
  for (const key of secretKeys) env[key] = key === 'REDIS_URL' ? 'redis://redis:6379' : `fake-${key.toLowerCase()}`;
  const config = parseConfigText(text as string, `${cmName}/${fileName}`, env);

  assert.equal(config.server.host, '0.0.0.0', 'server.host must face the pod network');
  assert.equal(config.server.port, ports.get('agent'), 'server.port = containerPort "agent"');
  const admin = config.admin.listen === undefined ? undefined : parseHostPort(config.admin.listen);
  assert.ok(admin !== undefined, 'admin.listen is set');
  assert.equal(admin.port, ports.get('admin'), 'admin.listen port = containerPort "admin"');
  assert.equal(config.admin.token, env.GATEWAY_ADMIN_TOKEN, 'admin.token comes from the Secret');
  assert.ok(config.state.redis !== undefined, 'state.redis is configured: replicas share it');
  const redisUrl = new URL(String(obj(secret.stringData, 'stringData').REDIS_URL));
  const redisService = find(objects, 'Service', redisUrl.hostname);
  const redisPorts = arr(obj(redisService.spec, 'spec').ports, 'ports').map((p) => Number(obj(p, 'port').port));
  assert.ok(redisPorts.includes(Number(redisUrl.port || 6379)), 'REDIS_URL names the redis Service port');

  // Services: the agent port, and the admin port on a ClusterIP Service of its own.
  const servicePort = (name: string): { port: number; target: unknown; type: unknown } => {
    const spec = obj(find(objects, 'Service', name).spec, `Service ${name}`);
    const [p, ...rest] = arr(spec.ports, 'ports').map((x) => obj(x, 'port'));
    assert.ok(p !== undefined && rest.length === 0, `Service ${name} has one port`);
    return { port: Number(p.port), target: p.targetPort, type: spec.type ?? 'ClusterIP' };
  };
  const resolve = (target: unknown): number | undefined => (typeof target === 'number' ? target : ports.get(String(target)));
  const agentSvc = servicePort('magma-gateway');
  assert.equal(agentSvc.port, config.server.port);
  assert.equal(resolve(agentSvc.target), config.server.port);
  const adminSvc = servicePort('magma-gateway-admin');
  assert.equal(adminSvc.type, 'ClusterIP', 'the admin port is never exposed beyond the cluster');
  assert.equal(adminSvc.port, admin.port);
  assert.equal(resolve(adminSvc.target), admin.port);

  // Probes: ready = /health on the agent port; alive = a path that does not depend on backends.
  const probe = (key: string): { path: string; port: number | undefined } => {
    const g = obj(obj(gateway[key], key).httpGet, `${key}.httpGet`);
    return { path: String(g.path), port: resolve(g.port) };
  };
  assert.deepEqual(probe('readinessProbe'), { path: '/health', port: config.server.port });
  const liveness = probe('livenessProbe');
  assert.notEqual(liveness.path, '/health', '/health is 503 while backends are down: it must not restart pods');
  assert.ok(['/v1/info', '/metrics'].includes(liveness.path));
  assert.equal(liveness.port, config.server.port);

  // Shutdown: the kubelet's SIGKILL comes after preStop + the whole drain.
  const preStop = arr(obj(obj(obj(gateway.lifecycle, 'lifecycle').preStop, 'preStop').exec, 'exec').command, 'command');
  assert.equal(preStop[0], 'sleep');
  const grace = Number(pod.terminationGracePeriodSeconds);
  assert.ok(
    grace > Number(preStop[1]) + config.server.drain_timeout_s,
    `terminationGracePeriodSeconds ${grace} must exceed preStop ${String(preStop[1])} s + server.drain_timeout_s ${config.server.drain_timeout_s} s`,
  );

  // Prometheus scrapes the port and path the gateway serves its metrics on.
  const annotations = obj(obj(obj(obj(deployment.spec, 'spec').template, 'template').metadata, 'metadata').annotations, 'annotations');
  assert.equal(annotations['prometheus.io/scrape'], 'true');
  assert.equal(Number(annotations['prometheus.io/port']), config.server.port);
  assert.equal(annotations['prometheus.io/path'], '/metrics');

  // The PDB and the HPA select / target this Deployment.
  const selector = obj(obj(obj(deployment.spec, 'spec').selector, 'selector').matchLabels, 'matchLabels');
  const podLabels = obj(obj(obj(obj(deployment.spec, 'spec').template, 'template').metadata, 'metadata').labels, 'labels');
  for (const [k, v] of Object.entries(selector)) assert.equal(podLabels[k], v);
  assert.deepEqual(obj(obj(find(objects, 'PodDisruptionBudget', 'magma-gateway').spec, 'spec').selector, 'selector').matchLabels, selector);
  const hpa = obj(find(objects, 'HorizontalPodAutoscaler', 'magma-gateway').spec, 'spec');
  assert.deepEqual(hpa.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'magma-gateway' });
  assert.deepEqual(obj(find(objects, 'Service', 'magma-gateway').spec, 'spec').selector, selector);

  // The image: what docker-compose.yml builds from the Dockerfile.
  const compose = obj(parseYaml(readFileSync(join(process.cwd(), 'docker-compose.yml'), 'utf8')), 'docker-compose.yml');
  const composeGateway = obj(obj(compose.services, 'services').gateway, 'services.gateway');
  assert.equal(gateway.image, composeGateway.image, 'the image docker-compose.yml builds');
  return { objects };
}

describe('deploy/kubernetes', () => {
  it('renders, validates against the Kubernetes schemas and agrees with the gateway and compose', () => {
    const { objects } = checkBase(render(BASE));
    for (const o of objects) {
      if (o.kind !== 'Namespace') assert.equal(obj(o.metadata, 'metadata').namespace, 'magma-gateway');
      assert.equal(obj(obj(o.metadata, 'metadata').labels, 'labels')['app.kubernetes.io/part-of'], 'magma-gateway');
    }
  });

  it('fails on a container port that the config does not use', () => {
    const objects = render(BASE);
    const [gateway] = containersOf(find(objects, 'Deployment', 'magma-gateway'));
    const agent = arr(gateway?.ports, 'ports').map((p) => obj(p, 'port')).find((p) => p.name === 'agent');
    assert.ok(agent !== undefined);
    agent.containerPort = 8080;
    assert.throws(() => checkBase(objects), /server\.port = containerPort "agent"/);
  });

  it('fails on an object the Kubernetes schema refuses', () => {
    const objects = render(BASE);
    const svc = obj(find(objects, 'Service', 'magma-gateway').spec, 'spec');
    obj(arr(svc.ports, 'ports')[0], 'port').port = 'eighty-eight';
    assert.throws(() => checkBase(objects));
  });
});
