/**
 * The Kubernetes base (deploy/kubernetes/) cannot be applied here (no cluster, no kubectl/kustomize binary), so
 * this test renders it as kustomize would for the fields the base uses (namespace, labels, images), validates
 * every object against the Kubernetes OpenAPI schemas (kubernetes-models), and checks that it agrees with the
 * gateway: the ConfigMap's config loads with the gateway's own loader, its ports are the container's and the
 * Services', the probes hit the right paths, the grace period covers the drain, and the image is the one
 * docker-compose.yml builds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { parseConfigText } from '../../src/config/load.js';
import { parseHostPort } from '../../src/config/schema.js';
import { compose, must, readData, readText } from './stack-files.js';

const BASE = 'deploy/kubernetes';
/** The kinds the base may hold. */
const KINDS = { Namespace, ConfigMap, Secret, Deployment, Service, PodDisruptionBudget, HorizontalPodAutoscaler };
type K8sObject = InstanceType<(typeof KINDS)[keyof typeof KINDS]>;
/** The kustomization fields this test renders: any other fails here rather than being ignored. */
const kustomization = readData(`${BASE}/kustomization.yaml`, z.strictObject({
  apiVersion: z.string(),
  kind: z.literal('Kustomization'),
  namespace: z.string(),
  labels: z.array(z.strictObject({ pairs: z.record(z.string(), z.string()), includeSelectors: z.literal(false) })),
  resources: z.array(z.string()),
  images: z.array(z.strictObject({ name: z.string(), newName: z.string(), newTag: z.string() })),
}));

/** What `kustomize build` makes of the base: namespace, labels and image rewrites applied. */
function render(): K8sObject[] {
  const labels = Object.assign({}, ...kustomization.labels.map((l) => l.pairs)) as Record<string, string>; // Object.assign types its result any
  return kustomization.resources.flatMap((file) =>
    parseAllDocuments(readText(`${BASE}/${file}`)).flatMap((doc) => {
      assert.deepEqual(doc.errors, [], file);
      const raw = z.looseObject({ kind: z.enum(Object.keys(KINDS) as (keyof typeof KINDS)[]), metadata: z.looseObject({}) }).parse(doc.toJS()); // Object.keys types its result string[]
      const o = new KINDS[raw.kind](raw as never); // any kind's fields: validate() checks them against its schema
      const meta = must(o.metadata, `${file} metadata`);
      if (!(o instanceof Namespace)) meta.namespace = kustomization.namespace;
      meta.labels = { ...meta.labels, ...labels };
      if (o instanceof Deployment) {
        for (const c of o.spec?.template.spec?.containers ?? []) {
          const [name] = (c.image ?? '').split(':');
          const rule = kustomization.images.find((i) => i.name === name);
          if (rule !== undefined) c.image = `${rule.newName}:${rule.newTag}`;
        }
      }
      return [o];
    }),
  );
}

function find<T extends K8sObject>(objects: K8sObject[], kind: new (...a: never[]) => T, name: string): T {
  return must(objects.find((o): o is T => o instanceof kind && o.metadata?.name === name), `${kind.name} ${name}`);
}

/** Every check on one rendered base; throws on the first disagreement. */
function checkBase(objects: K8sObject[]): void {
  for (const o of objects) o.validate();
  const deployment = find(objects, Deployment, 'magma-gateway');
  const template = must(deployment.spec?.template, 'pod template');
  const pod = must(template.spec, 'pod spec');
  const gateway = must(pod.containers[0], 'the gateway container');
  const ports = new Map((gateway.ports ?? []).map((p) => [p.name, p.containerPort]));
  const resolve = (port: number | string | undefined): number | undefined => (typeof port === 'number' ? port : ports.get(port));

  // node itself runs the gateway (SIGTERM reaches it), started plainly: it sets its V8 heap growth itself (docs/performance.md#v8-flags).
  assert.deepEqual(gateway.command, ['node', 'dist/src/cli.js']);
  assert.ok(!(gateway.env ?? []).some((e) => e.name.startsWith('MALLOC_')), 'no malloc variable');
  // The config the pods run: mounted from the ConfigMap at the path given on the command line.
  const args = gateway.args ?? [];
  const configPath = must(args[args.indexOf('--config') + 1], '--config');
  const mount = must(gateway.volumeMounts?.find((m) => configPath.startsWith(`${m.mountPath}/`)), `the volume mount of ${configPath}`);
  const cmName = must(pod.volumes?.find((v) => v.name === mount.name)?.configMap?.name, 'the config volume\'s ConfigMap');
  const fileName = configPath.slice(mount.mountPath.length + 1);
  const text = must(find(objects, ConfigMap, cmName).data?.[fileName], `ConfigMap ${cmName} key ${fileName}`);
  // Every ${VAR} the config names comes from the Secret the container takes its environment from.
  const secret = find(objects, Secret, must(gateway.envFrom?.find((e) => e.secretRef)?.secretRef?.name, 'envFrom secretRef'));
  const secretData = { ...secret.data, ...secret.stringData };
  const env = Object.fromEntries(Object.keys(secretData).map((k) => [k, k === 'REDIS_URL' ? 'redis://redis:6379' : `fake-${k.toLowerCase()}`]));
  const config = parseConfigText(text, `${cmName}/${fileName}`, env);

  assert.equal(config.server.host, '0.0.0.0', 'server.host must face the pod network');
  assert.equal(config.server.port, ports.get('agent'), 'server.port = containerPort "agent"');
  const admin = parseHostPort(must(config.admin.listen, 'admin.listen'));
  assert.equal(admin?.port, ports.get('admin'), 'admin.listen port = containerPort "admin"');
  assert.equal(config.admin.token, env.GATEWAY_ADMIN_TOKEN, 'admin.token comes from the Secret');
  assert.ok(config.state.redis !== undefined, 'state.redis is configured: replicas share it');
  const redisUrl = new URL(must(secretData.REDIS_URL, 'REDIS_URL'));
  const redisPorts = find(objects, Service, redisUrl.hostname).spec?.ports?.map((p) => p.port);
  assert.ok(redisPorts?.includes(Number(redisUrl.port || 6379)), 'REDIS_URL names the redis Service port');

  // Services: the agent port, and the admin port on a ClusterIP Service of its own.
  for (const [name, port] of [['magma-gateway', config.server.port], ['magma-gateway-admin', admin?.port]] as const) {
    const spec = must(find(objects, Service, name).spec, `Service ${name}`);
    assert.equal(spec.type ?? 'ClusterIP', 'ClusterIP', `Service ${name} stays inside the cluster`);
    assert.deepEqual(spec.ports?.map((p) => [p.port, resolve(p.targetPort)]), [[port, port]], `Service ${name} ports`);
    assert.deepEqual(spec.selector, deployment.spec?.selector.matchLabels);
  }

  // Probes: ready = /health on the agent port; alive = a path that does not depend on backends.
  const probe = (p: typeof gateway.readinessProbe): [string | undefined, number | undefined] => [p?.httpGet?.path, resolve(p?.httpGet?.port)];
  assert.deepEqual(probe(gateway.readinessProbe), ['/health', config.server.port]);
  const [alivePath, alivePort] = probe(gateway.livenessProbe);
  assert.ok(alivePath === '/v1/info' || alivePath === '/metrics', '/health is 503 while backends are down: it must not restart pods');
  assert.equal(alivePort, config.server.port);

  // Shutdown: the kubelet's SIGKILL comes after preStop + the whole drain.
  const [sleep, preStopS] = gateway.lifecycle?.preStop?.exec?.command ?? [];
  assert.equal(sleep, 'sleep');
  const grace = Number(pod.terminationGracePeriodSeconds);
  assert.ok(grace > Number(preStopS) + config.server.drain_timeout_s, `terminationGracePeriodSeconds ${grace} > preStop ${preStopS} s + server.drain_timeout_s`);

  // Prometheus scrapes the port and path the gateway serves its metrics on.
  const annotations = template.metadata?.annotations ?? {};
  assert.deepEqual([annotations['prometheus.io/scrape'], Number(annotations['prometheus.io/port']), annotations['prometheus.io/path']], ['true', config.server.port, '/metrics']);

  // The PDB and the HPA select / target this Deployment.
  const selector = must(deployment.spec?.selector.matchLabels, 'selector');
  for (const [k, v] of Object.entries(selector)) assert.equal(template.metadata?.labels?.[k], v);
  assert.deepEqual(find(objects, PodDisruptionBudget, 'magma-gateway').spec?.selector?.matchLabels, selector);
  assert.deepEqual(find(objects, HorizontalPodAutoscaler, 'magma-gateway').spec?.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'magma-gateway' });

  // The image: what docker-compose.yml builds from the Dockerfile.
  assert.equal(gateway.image, compose.services.gateway?.image, 'the image docker-compose.yml builds');
}

describe('deploy/kubernetes', () => {
  it('renders, validates against the Kubernetes schemas and agrees with the gateway and compose', () => {
    const objects = render();
    checkBase(objects);
    for (const o of objects) {
      assert.equal(o.metadata?.labels?.['app.kubernetes.io/part-of'], 'magma-gateway');
      if (!(o instanceof Namespace)) assert.equal(o.metadata?.namespace, 'magma-gateway');
    }
  });

  it('fails on a container port that the config does not use', () => {
    const objects = render();
    const agent = must(find(objects, Deployment, 'magma-gateway').spec?.template.spec?.containers[0]?.ports?.find((p) => p.name === 'agent'), 'agent port');
    agent.containerPort = 8080;
    assert.throws(() => checkBase(objects), /server\.port = containerPort "agent"/);
  });

  it('fails on an object the Kubernetes schema refuses', () => {
    const objects = render();
    const port = must(find(objects, Service, 'magma-gateway').spec?.ports?.[0], 'Service port');
    Object.assign(port, { port: 'eighty-eight' }); // deliberately not a number
    assert.throws(() => checkBase(objects), /port/);
  });
});
