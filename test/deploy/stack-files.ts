/**
 * The shipped stack files read with real parsers (yaml, dockerfile-ast) into zod schemas of the forms they use:
 * a file written in another form fails here, naming the field, instead of being misread by the checks.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerfileParser, type ImageTemplate } from 'dockerfile-ast';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** The tests run from the repo root (`npm test`, `node --test dist/test/...`). */
export const repoPath = (rel: string): string => join(process.cwd(), rel);
export const readText = (rel: string): string => readFileSync(repoPath(rel), 'utf8');
export const exists = (rel: string): boolean => existsSync(repoPath(rel));

/** A YAML or JSON file of the repo, checked against `schema`. */
export function readData<S extends z.ZodType>(rel: string, schema: S): z.infer<S> {
  const r = schema.safeParse(parseYaml(readText(rel))); // YAML is a superset of JSON
  assert.ok(r.success, `${rel}: ${r.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** A value that must be there: the assertion names what was missing. */
export function must<T>(v: T | null | undefined, what: string): T {
  assert.ok(v !== undefined && v !== null, `${what} is missing`);
  return v;
}

// docker-compose.yml: exec-form commands, short port and volume syntax, depends_on with conditions.
const service = z.strictObject({
  build: z.strictObject({ context: z.string(), dockerfile: z.string() }).optional(),
  image: z.string(),
  entrypoint: z.array(z.string()).optional(),
  command: z.array(z.string()).optional(),
  ports: z.array(z.string()).default([]),
  expose: z.array(z.string()).default([]),
  environment: z.record(z.string(), z.string()).default({}),
  volumes: z.array(z.string()).default([]),
  healthcheck: z.looseObject({ test: z.array(z.string()) }).optional(),
  depends_on: z.record(z.string(), z.strictObject({ condition: z.string() })).default({}),
  restart: z.string().optional(),
});
export type Service = z.infer<typeof service>;
export const compose = readData('docker-compose.yml', z.strictObject({
  name: z.string(),
  services: z.record(z.string(), service),
  volumes: z.record(z.string(), z.null()).default({}),
}));

/** The stages of the Dockerfile (dockerfile-ast: the parser of the Docker language server), by stage name. */
export const dockerfile = DockerfileParser.parse(readText('Dockerfile'));
export const stages = dockerfile.getFROMs().map((from) => ({
  from,
  image: must(dockerfile.getContainingImage(from.getRange().start), `stage ${from.getBuildStage()}`),
}));

/** The exec form of an ENTRYPOINT or CMD of a stage (the last one wins, as in Docker). */
export function execForm(image: ImageTemplate, keyword: 'ENTRYPOINT' | 'CMD'): string[] {
  const i = (keyword === 'CMD' ? image.getCMDs() : image.getENTRYPOINTs()).at(-1);
  return i?.getJSONStrings().map((s) => s.getJSONValue()) ?? [];
}

// config/grafana/dashboards/magma-gateway.json
const target = z.looseObject({ expr: z.string(), refId: z.string(), datasource: z.unknown().optional() });
const gridPos = z.object({ h: z.number(), w: z.number(), x: z.number(), y: z.number() });
const panel = z.looseObject({ id: z.number(), type: z.string(), title: z.string(), gridPos, datasource: z.unknown().optional(), targets: z.array(target).default([]) });
export const DASHBOARD = 'config/grafana/dashboards/magma-gateway.json';
export const dashboard = readData(DASHBOARD, z.looseObject({
  uid: z.string(),
  panels: z.array(panel.extend({ panels: z.array(panel).default([]) })), // a row holds its collapsed panels
  templating: z.object({ list: z.array(z.looseObject({ name: z.string(), query: z.string(), datasource: z.unknown() })) }),
}));
/** Every panel, a row's nested (collapsed) panels included. */
export const panels = dashboard.panels.flatMap((p) => [p, ...p.panels]);
/** Every PromQL expression of the dashboard, with where it is. */
export const expressions = panels.flatMap((p) => p.targets.map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr })));
