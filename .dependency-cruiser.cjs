/**
 * The layering docs/development.md draws, checked by test/architecture.test.ts (so `npm test` fails on a
 * cycle or an upward import). Layers, bottom to top; a module may import its own layer and any layer below:
 *   stats -> protocol -> config -> routing -> upstream -> dispatch -> batch core -> HTTP -> app/cli
 * stats (the experiment report's pure statistics) is a leaf: it imports nothing else from src/ but errors.ts (itself
 * a leaf), so that a broken precondition throws a registered GatewayError like everywhere else.
 * Infrastructure (state, memory, reader, metrics, logging, tracing, errors, abort, patterns, fd-limit) sits beside them: importable from any
 * layer, importing only protocol, config and other infrastructure.
 */
const LAYERS = [
  { name: 'stats', path: '^src/stats/' },
  { name: 'protocol', path: '^src/(protocol|validation)/' },
  { name: 'config', path: '^src/config/' },
  { name: 'routing', path: '^src/routing/' },
  { name: 'upstream', path: '^src/upstream/' },
  { name: 'dispatch', path: '^src/dispatch/' },
  { name: 'batch', path: '^src/(batch/|cache/|clients/|coaching/|experiments/|runtime\\.ts$)' },
  { name: 'http', path: '^src/(http/|routes/|plugins/|admin/|reload\\.ts$)' },
  { name: 'app', path: '^src/(commands/|app\\.ts$|admin-app\\.ts$|cli\\.ts$|process-settings\\.ts$|shutdown\\.ts$)' },
];
const INFRA = '^src/(state/|memory/|reader/|patterns/|tracing/|metrics\\.ts$|logging\\.ts$|errors\\.ts$|abort\\.ts$|fd-limit\\.ts$)';

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.name}-imports-downward-only`,
  comment: `${layer.name} may import only layers below it (docs/development.md)`,
  severity: 'error',
  from: { path: layer.path },
  to: { path: LAYERS.slice(i + 1).map((l) => l.path) },
}));

/* global module -- a CommonJS file: dependency-cruiser loads its config with require() */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no module imports itself through others',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-folders',
      comment: 'no folder imports itself through others (a.ts -> b/x.ts and b/y.ts -> a2.ts is a folder cycle)',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'stats-is-a-leaf',
      comment: 'src/stats/ holds pure functions on counts: it imports nothing else from src/ but errors.ts',
      severity: 'error',
      from: { path: '^src/stats/' },
      to: { path: '^src/', pathNot: ['^src/stats/', '^src/errors\\.ts$'] },
    },
    {
      name: 'infrastructure-imports-no-layer-above-config',
      comment: 'state, metrics, logging, tracing, errors, abort, patterns import only protocol, config and each other',
      severity: 'error',
      from: { path: INFRA },
      to: { path: LAYERS.filter((l) => !['stats', 'protocol', 'config'].includes(l.name)).map((l) => l.path) },
    },
    {
      name: 'fastify-only-in-http-and-app',
      comment: 'below the HTTP layer, loggers are src/logging.ts Logger; requests and replies stay in routes/',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(http/|routes/|plugins/|app\\.ts$|admin-app\\.ts$|cli\\.ts$|shutdown\\.ts$)' },
      // Any node_modules folder: the test's scratch tree links to this one, which resolves outside it.
      to: { path: '(^|/)node_modules/(fastify|fastify-plugin|@fastify/)' },
    },
    {
      name: 'every-module-in-a-layer',
      comment: 'a new top-level file or folder under src/ is given a layer here, so the rules above cover it',
      severity: 'error',
      from: { path: '^src/', pathNot: [INFRA, ...LAYERS.map((l) => l.path)] },
      to: {},
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
  },
};
