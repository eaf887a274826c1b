import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // Three ways of making a per-request object that V8 keeps past its time (docs/performance.md#batches-die-young):
    // each kept every small batch alive until a full GC before it was taken out. Only the
    // modules that build per-request objects: long-lived code (config, runtime, admin) may pretenure freely.
    files: [
      'src/dispatch/**/*.ts',
      'src/batch/**/*.ts',
      'src/protocol/**/*.ts',
      'src/http/batch-front.ts',
      'src/http/front-exchange.ts',
      'src/upstream/backend-call.ts',
      'src/upstream/call-replica.ts',
      'src/upstream/answer-bounds.ts',
      'src/upstream/answer-collector.ts',
      'src/clients/client-limiter.ts',
      'src/experiments/recorder.ts',
      'src/experiments/trajectory.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "AssignmentExpression[left.type='MemberExpression'] > :matches(ArrowFunctionExpression, FunctionExpression).right",
          message:
            "V8's parser pretenures a function literal assigned to a property (Parser::CheckAssigningFunctionLiteralToProperty in V8's src/parsing/parser.h calls set_pretenure()): allocated in the old generation, it holds a per-request object until a full GC. Return the function from a helper, or use a class method.",
        },
        {
          selector: ':function ObjectExpression > Property[kind=/^(get|set)$/]',
          message:
            'Accessors of an object literal made inside a function are new functions per object, and V8 kept each such object (and all its accessors reach) until a full GC (measured: bench/scripts/allocation-per-request.sh). Use a class with prototype getters.',
        },
        {
          selector: 'ObjectExpression > SpreadElement:first-child + *',
          message:
            'An object literal that starts with a spread and goes on (`{ ...a, b }`) survived scavenges with all it reaches, even when dropped at once (docs/performance.md#what-the-young-generation-keeps); a plain clone `{ ...a }` did not. Write Object.assign({}, a, { b }), or name the fields.',
        },
      ],
    },
  },
  {
    // The batch's path reads in one sitting: no stage longer than a screen, no call that needs a table of arguments.
    files: ['src/batch/**/*.ts', 'src/http/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['src/http/**/*.ts'],
    rules: { 'max-params': ['error', { max: 6 }] },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
