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
    // Two ways of making an object that V8 keeps past its time (docs/performance.md#targets):
    // both kept every small batch alive until a full GC before they were taken out.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "AssignmentExpression[left.type='MemberExpression'] > :matches(ArrowFunctionExpression, FunctionExpression).right",
          message:
            'V8 allocates a function literal assigned to a property in the old generation: for a per-request object it holds the request until a full GC. Return the function from a helper instead.',
        },
        {
          selector: ':function ObjectExpression > Property[kind=/^(get|set)$/]',
          message:
            'Accessors of an object literal made inside a function are new functions per object, and V8 kept each such object (and all its accessors reach) until a full GC. Use a class, or shared descriptors with Object.defineProperties.',
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
